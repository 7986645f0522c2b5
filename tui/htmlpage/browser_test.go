package htmlpage

import (
	"bytes"
	"context"
	"fmt"
	"image"
	_ "image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

// The browser tests open pages in Debian's chromium, headless, from disk
// with the network off. Environment:
//
//	LEASERACE_REQUIRE_BROWSER=1  no chromium is a failure, not a skip
//	LEASERACE_BROWSER_ALL=1      every shipped run and played runs, not one page
//	LEASERACE_CHROMIUM           the browser to run (default: chromium on PATH)
//	LEASERACE_SCREENSHOT_DIR     keep the screenshots there
const (
	envRequireBrowser = "LEASERACE_REQUIRE_BROWSER"
	envBrowserAll     = "LEASERACE_BROWSER_ALL"
	envChromium       = "LEASERACE_CHROMIUM"
	envScreenshots    = "LEASERACE_SCREENSHOT_DIR"
)

// chromiumPath finds the browser, or skips (fails when required).
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(envChromium); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	why := "no chromium found on PATH (apt-get install chromium, or set " + envChromium + "): the HTML page's browser tests are skipped"
	if os.Getenv(envRequireBrowser) == "1" {
		t.Fatal(why + ", and " + envRequireBrowser + "=1 requires them")
	}
	t.Skip(why)
	return ""
}

// newBrowser starts one headless chromium for a test, with a fresh
// profile and every request off the machine made to fail: pages come from
// disk only.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		// Subtests open pages side by side, each in a tab of its
		// own: a tab in the background must not have its timers and
		// painting slowed.
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		// The network off: no name resolves, and no proxy answers.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
		chromedp.Flag("proxy-server", "127.0.0.1:9"),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	// The first Run starts the browser; it must not carry a timeout.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("cannot start %s: %v", path, err)
	}
	return ctx
}

// pageState is what the page's DOM says, read in one evaluation.
type pageState struct {
	Lanes     []string `json:"lanes"`
	Marks     int      `json:"marks"`
	Kinds     []string `json:"kinds"`
	Legend    []string `json:"legend"`
	Glyphs    []string `json:"glyphs"`
	LegendTxt string   `json:"legendText"`
	Slider    string   `json:"slider"`
	Where     string   `json:"where"`
	Future    int      `json:"future"`
	Selected  []string `json:"selected"`
	Detail    string   `json:"detail"`
	Body      string   `json:"body"`
	Loaded    []string `json:"loaded"`
	Cursor    string   `json:"cursor"`
	Focused   string   `json:"focused"`
}

const readState = `(() => {
  const q = s => Array.from(document.querySelectorAll(s));
  return {
    lanes: q("#lanes [data-lane]").map(e => e.getAttribute("data-lane")),
    marks: q("#lanes .mark").length,
    kinds: q("#lanes .mark").map(e => e.getAttribute("data-kind")),
    legend: q("#legend li[data-kind]").map(e => e.getAttribute("data-kind")),
    glyphs: q("#lanes .mark .glyph").map(e => e.textContent),
    legendText: document.getElementById("legend").innerText,
    slider: document.getElementById("slider").value,
    where: document.getElementById("where").textContent,
    future: q("#lanes .mark.future").length,
    selected: q("#lanes .mark.selected").map(e => e.getAttribute("data-step")),
    detail: document.querySelector("#detail .body").innerText,
    body: document.body.innerText,
    loaded: performance.getEntriesByType("resource").map(e => e.name),
    cursor: document.getElementById("cursor").getAttribute("x1"),
    focused: document.activeElement ? (document.activeElement.getAttribute("data-step") || document.activeElement.id || document.activeElement.tagName) : "",
  };
})()`

func state(t *testing.T, ctx context.Context) pageState {
	t.Helper()
	st, err := chromedp.Run(ctx, chromedp.Evaluate[pageState](readState))
	if err != nil {
		t.Fatalf("reading the page: %v", err)
	}
	return st
}

// browse opens the page file in a new tab of the browser and checks it
// the way a reader would use it: the lanes, the marks and the legend, the
// cursor by key, a move chosen by click and by focus, the jump to the
// first danger, no console errors, nothing loaded, and a screenshot.
func browse(t *testing.T, browser context.Context, file string, tr transcript.Transcript) {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, time.Minute)
	defer cancelT()
	console := chromedp.Console(ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+file), chromedp.WaitReady("#detail .body pre, #detail .body p")); err != nil {
		t.Fatalf("opening %s: %v", file, err)
	}
	n := len(tr.Steps)
	st := state(t, ctx)
	if len(st.Loaded) > 0 {
		t.Errorf("the page loaded %q; it must need nothing beyond itself", st.Loaded)
	}
	// The clock gets its lane when it moves (the terminal's model).
	wantLanes := map[string]bool{}
	for _, s := range tr.Steps {
		wantLanes[s.Actor] = true
	}
	for a := range wantLanes {
		if !slices.Contains(st.Lanes, a) {
			t.Errorf("no lane for %s among %q", a, st.Lanes)
		}
	}
	if st.Marks != n {
		t.Errorf("%d marks for %d moves", st.Marks, n)
	}
	for i, k := range st.Kinds {
		if !slices.Contains(st.Legend, k) {
			t.Errorf("mark %d is %q, which the legend does not list (%q)", i, k, st.Legend)
		}
		if i < len(st.Glyphs) && !strings.Contains(st.LegendTxt, st.Glyphs[i]) {
			t.Errorf("glyph %q of mark %d is not in the legend", st.Glyphs[i], i)
		}
	}
	if st.Slider != fmt.Sprint(n) || st.Future != 0 {
		t.Errorf("the page opens at slider %s with %d moves still to come, want the whole run (%d)", st.Slider, st.Future, n)
	}
	for _, w := range []string{strings.ToUpper(tr.Outcome.Verdict), "fence", "lease_version", "the resource's highest fence accepted", "Legend"} {
		if !strings.Contains(st.Body, w) {
			t.Errorf("the page does not show %q", w)
		}
	}
	// The resource's pane reads the fences from the page's data: the
	// highest accepted at the end, and no field the script could not find.
	high, stored := tr.Initial.Resource.Fence, tr.Initial.Resource.Fence
	if n > 0 {
		last := tr.Steps[n-1].Resource
		stored = last.Fence
		for _, e := range last.Effects {
			if e.Accepted {
				high = max(high, e.Fence)
			}
		}
	}
	if w := fmt.Sprintf("the resource's highest fence accepted: %d", high); !strings.Contains(st.Body, w) {
		t.Errorf("the page does not show %q", w)
	}
	if w := fmt.Sprintf("regressed: stored fence %d", stored); (stored != high) != strings.Contains(st.Body, w) {
		t.Errorf("the page shows %q: %v, want %v", w, !(stored != high), stored != high)
	}
	for _, w := range []string{"undefined", "NaN"} {
		if strings.Contains(st.Body, w) {
			t.Errorf("the page shows %q: its script read a field the data does not have", w)
		}
	}
	for _, s := range tr.Steps {
		if s.Tag != "" && !strings.Contains(st.Body, s.Tag) {
			t.Errorf("command tag %q (t=%d) is not shown", s.Tag, s.T)
		}
	}
	if n > 0 {
		// ← steps back one move: the last move is still to come.
		if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.ArrowLeft)); err != nil {
			t.Fatal(err)
		}
		st = state(t, ctx)
		if st.Slider != fmt.Sprint(n-1) || st.Future != 1 || !strings.Contains(st.Where, fmt.Sprint(n-1)) && n > 1 {
			t.Errorf("after ←: slider %s, %d marks to come, %q; want %d, 1", st.Slider, st.Future, st.Where, n-1)
		}
		// Home goes to the start, → makes the first move.
		if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Home), chromedp.KeyEvent(kb.ArrowRight)); err != nil {
			t.Fatal(err)
		}
		st = state(t, ctx)
		if st.Slider != "1" || st.Future != n-1 || !slices.Equal(st.Selected, []string{"0"}) || st.Cursor != fmt.Sprint(cursorX(1)) {
			t.Errorf("after Home →: slider %s, %d to come, selected %q, cursor at %s; want 1, %d, [0], %d", st.Slider, st.Future, st.Selected, st.Cursor, n-1, cursorX(1))
		}
		if s := tr.Steps[0]; !strings.Contains(st.Detail, s.Note) || (s.SQL != "" && !strings.Contains(st.Detail, s.Tag)) {
			t.Errorf("move 1's details do not show its narration and tag:\n%s", st.Detail)
		}
		// Clicking the last move shows its SQL, arguments, tag and call.
		last := n - 1
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#lanes .mark[data-step="%d"] circle`, last)))); err != nil {
			t.Fatal(err)
		}
		st = state(t, ctx)
		s := tr.Steps[last]
		if st.Slider != fmt.Sprint(n) || !slices.Equal(st.Selected, []string{fmt.Sprint(last)}) {
			t.Errorf("clicking the last move: slider %s, selected %q", st.Slider, st.Selected)
		}
		for _, w := range detailWords(s) {
			if !strings.Contains(st.Detail, w) {
				t.Errorf("the last move's details lack %q:\n%s", w, st.Detail)
			}
		}
		// Focus (Tab) on a move chooses it too.
		if err := chromedp.Do(ctx, chromedp.Focus(chromedp.CSS(`#lanes .mark[data-step="0"]`))); err != nil {
			t.Fatal(err)
		}
		if st = state(t, ctx); !slices.Equal(st.Selected, []string{"0"}) || st.Slider != "1" {
			t.Errorf("focusing move 1: selected %q, slider %s", st.Selected, st.Slider)
		}
	}
	// d jumps to the first danger, when there is one.
	danger := firstDanger(tr)
	if err := chromedp.Do(ctx, chromedp.KeyEvent("d")); err != nil {
		t.Fatal(err)
	}
	st = state(t, ctx)
	if danger >= 0 && (!slices.Equal(st.Selected, []string{fmt.Sprint(danger)}) || st.Focused != fmt.Sprint(danger) || st.Slider != fmt.Sprint(danger+1)) {
		t.Errorf("d: selected %q, focus on %q, slider %s; want the first danger, move %d", st.Selected, st.Focused, st.Slider, danger+1)
	}
	checkMedia(t, ctx)
	// The window, not the whole page: enough to see the page is drawn,
	// and a fraction of the PNG to encode and decode.
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	checkScreenshot(t, shot, file)
	// A marker last: the console keeps order, so every message the page
	// wrote before it has arrived when it does.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`console.info("leaserace-test-end"), true`)); err != nil {
		t.Fatal(err)
	}
	for m, err := range console {
		if err != nil {
			t.Fatalf("reading the console: %v", err)
		}
		if m.Text == "leaserace-test-end" {
			break
		}
		if m.Type == chromedp.ConsoleError || m.IsException() {
			t.Errorf("console %s", m)
		}
	}
}

// checkMedia: with prefers-color-scheme dark the page turns dark, and
// printed it hides the controls and shows every move at full strength.
func checkMedia(t *testing.T, ctx context.Context) {
	t.Helper()
	type looks struct {
		Bg       string `json:"bg"`
		Controls string `json:"controls"`
		Faint    int    `json:"faint"`
	}
	const read = `(() => ({
  bg: getComputedStyle(document.body).backgroundColor,
  controls: getComputedStyle(document.querySelector(".controls")).display,
  faint: Array.from(document.querySelectorAll("#lanes .mark")).filter(m => getComputedStyle(m).opacity !== "1").length,
}))()`
	media := func(m, scheme string) looks {
		t.Helper()
		if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Media: m, Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
		}); err != nil {
			t.Fatal(err)
		}
		l, err := chromedp.Run(ctx, chromedp.Evaluate[looks](read))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	// Two moves to come, so the screen has faint marks and print must not.
	if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Home)); err != nil {
		t.Fatal(err)
	}
	light, dark, print := media("screen", "light"), media("screen", "dark"), media("print", "light")
	if light.Bg == dark.Bg {
		t.Errorf("prefers-color-scheme dark leaves the background %s", dark.Bg)
	}
	if print.Controls != "none" || light.Controls == "none" {
		t.Errorf("the controls show as %q on screen and %q in print; want shown, then hidden", light.Controls, print.Controls)
	}
	if light.Faint == 0 || print.Faint != 0 {
		t.Errorf("at the start %d marks are faint on screen and %d in print; want some, then none", light.Faint, print.Faint)
	}
	media("", "")
	if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.End)); err != nil {
		t.Fatal(err)
	}
}

// detailWords is what a move's details must show.
func detailWords(s transcript.Step) []string {
	w := []string{s.Note}
	if s.SQL != "" {
		w = append(w, strings.SplitN(s.SQL, "\n", 2)[0], s.Tag)
	}
	if s.Call != nil {
		w = append(w, s.Call.Method+" "+s.Call.Path, fmt.Sprint(s.Call.Status))
	}
	return w
}

// firstDanger is the first move the page must jump to: an accepted stale
// write or a row whose fence went back; -1 when none.
func firstDanger(tr transcript.Transcript) int {
	prev, effects := tr.Initial.Coordinator, 0
	for i, s := range tr.Steps {
		if n := len(s.Resource.Effects); n > effects && s.Resource.Effects[n-1].Judgement == scenario.JudgedConflict {
			return i
		}
		if prev != nil && s.Coordinator != nil && s.Coordinator.Fence < prev.Fence {
			return i
		}
		prev, effects = s.Coordinator, len(s.Resource.Effects)
	}
	return -1
}

// checkScreenshot decodes the PNG and checks it shows something; it is
// kept under LEASERACE_SCREENSHOT_DIR when that is set.
func checkScreenshot(t *testing.T, shot []byte, file string) {
	t.Helper()
	img, _, err := image.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("the screenshot is no PNG: %v", err)
	}
	b := img.Bounds()
	if b.Dx() < 800 || b.Dy() < 600 {
		t.Errorf("screenshot %v, want at least 800×600", b)
	}
	colours := map[[4]uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y && len(colours) < 16; y += 7 {
		for x := b.Min.X; x < b.Max.X && len(colours) < 16; x += 7 {
			r, g, bl, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, bl, a}] = true
		}
	}
	if len(colours) < 16 {
		t.Errorf("the screenshot has %d colours: a blank page?", len(colours))
	}
	if dir := os.Getenv(envScreenshots); dir != "" {
		name := strings.TrimSuffix(filepath.Base(file), ".html") + ".png"
		if err := os.WriteFile(filepath.Join(dir, name), shot, 0o644); err != nil {
			t.Error(err)
		}
	}
}

// writePage renders the transcript's page into dir.
func writePage(t *testing.T, dir, name string, tr transcript.Transcript) string {
	t.Helper()
	page, err := Render(tr)
	if err != nil {
		t.Fatal(err)
	}
	checkPage(t, tr, page)
	file := filepath.Join(dir, name+".html")
	if err := os.WriteFile(file, page, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// The page of paused-holder under compare/off in a real browser; with
// LEASERACE_BROWSER_ALL=1, every shipped run of every built-in scenario
// under all six settings.
func TestPageInBrowser(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	type run struct {
		name string
		k    scenario.Knobs
	}
	runs := []run{{"paused-holder", scenario.Knobs{Renewal: scenario.RenewalCompare, Fencing: scenario.FencingOff}}}
	if os.Getenv(envBrowserAll) == "1" {
		runs = nil
		for _, name := range scenario.BuiltinNames() {
			for _, k := range scenario.AllKnobs() {
				runs = append(runs, run{name, k})
			}
		}
	} else {
		t.Logf("one page; %s=1 opens every shipped run", envBrowserAll)
	}
	dir := t.TempDir()
	for _, r := range runs {
		t.Run(r.name+"/"+r.k.String(), func(t *testing.T) {
			t.Parallel()
			tr, err := engine.ShippedTranscript(r.name, r.k)
			if err != nil {
				t.Fatal(err)
			}
			browse(t, browser, writePage(t, dir, transcript.Name(r.name, r.k), tr), tr)
		})
	}
}
