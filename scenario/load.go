package scenario

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// MaxFileSize bounds a scenario file; anything larger is not a scenario.
const MaxFileSize = 1 << 20

// MaxEvents bounds a scenario's timeline so a file cannot make a run unbounded.
const MaxEvents = 1000

// Error is a problem in a scenario file, located at file:line:column.
type Error struct {
	File   string
	Line   int
	Column int
	Msg    string
}

func (e *Error) Error() string {
	switch {
	case e.Line > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
	default:
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
}

// file is the scenario as written, before times are resolved.
type file struct {
	Name        string           `yaml:"name"`
	Title       string           `yaml:"title"`
	Description string           `yaml:"description"`
	Lease       string           `yaml:"lease"`
	Window      *fileWindow      `yaml:"window"`
	TTL         *whole           `yaml:"ttl"`
	Times       map[string]whole `yaml:"times"`
	Initial     fileInitial      `yaml:"initial"`
	Events      []fileEvent      `yaml:"events"`
	Expect      []fileExpect     `yaml:"expect"`
	Goals       []fileGoal       `yaml:"goals"`

	path string
	src  []byte
	ast  *ast.File
}

// whole is an integer in a scenario file. The YAML decoder alone would
// take 1.5 or "60" where an integer belongs and truncate it; a file means
// what it says or is refused.
type whole int64

// UnmarshalYAML implements yaml.NodeUnmarshaler.
func (w *whole) UnmarshalYAML(n ast.Node) error {
	if in, ok := n.(*ast.IntegerNode); ok {
		switch v := in.Value.(type) {
		case int64:
			*w = whole(v)
			return nil
		case uint64:
			if v <= math.MaxInt64 {
				*w = whole(v)
				return nil
			}
			return &nodeError{tok: n.GetToken(), msg: fmt.Sprintf("%d does not fit: want a whole number up to %d", v, int64(math.MaxInt64))}
		}
	}
	found := nodeWords(n.Type())
	if tok := n.GetToken(); tok != nil && n.Type() != ast.MappingType && n.Type() != ast.SequenceType {
		found = strconv.Quote(tok.Value)
	}
	return &nodeError{tok: n.GetToken(), msg: "want a whole number, found " + found}
}

// nodeError is a value of the wrong kind, where the file has it.
type nodeError struct {
	tok *token.Token
	msg string
}

func (e *nodeError) Error() string { return e.msg }

type fileWindow struct {
	From whole `yaml:"from"`
	To   whole `yaml:"to"`
}

type fileInitial struct {
	Coordinator *fileLease    `yaml:"coordinator"`
	Resource    *fileResource `yaml:"resource"`
}

type fileLease struct {
	Owner        string `yaml:"owner"`
	Fence        *whole `yaml:"fence"`
	LeaseVersion *whole `yaml:"lease_version"`
	ExpiresAt    *whole `yaml:"expires_at"`
}

type fileResource struct {
	Fence *whole `yaml:"fence"`
	// Epoch is the fence's old key, still read (fenceKey).
	Epoch *whole `yaml:"epoch"`
	Value any    `yaml:"value"`
}

type fileEvent struct {
	T         any        `yaml:"t"`
	Actor     string     `yaml:"actor"`
	Action    string     `yaml:"action"`
	Heartbeat string     `yaml:"heartbeat"`
	Message   string     `yaml:"message"`
	Snapshot  *fileLease `yaml:"snapshot"`
	Fence     *whole     `yaml:"fence"`
	// Epoch is the fence's old key, still read (fenceKey).
	Epoch *whole   `yaml:"epoch"`
	Value any      `yaml:"value"`
	Note  string   `yaml:"note"`
	Ask   *fileAsk `yaml:"ask"`
}

type fileExpect struct {
	Renewal     string        `yaml:"renewal"`
	Fencing     string        `yaml:"fencing"`
	Effects     *whole        `yaml:"effects"`
	Verdict     string        `yaml:"verdict"`
	Coordinator *fileLease    `yaml:"coordinator"`
	Resource    *fileResource `yaml:"resource"`
}

// LoadFile reads and validates a scenario file.
func LoadFile(path string) (*Scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open scenario file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot read scenario file: %w", err)
	}
	if st.IsDir() {
		return nil, &Error{File: path, Msg: "is a directory, not a scenario file"}
	}
	if st.Size() > MaxFileSize {
		return nil, &Error{File: path, Msg: fmt.Sprintf("is %d bytes; a scenario file may be at most %d", st.Size(), MaxFileSize)}
	}
	buf := make([]byte, st.Size())
	if _, err := f.ReadAt(buf, 0); err != nil && st.Size() > 0 {
		return nil, fmt.Errorf("cannot read scenario file %s: %w", path, err)
	}
	return Parse(path, buf)
}

// Parse validates scenario YAML; name is used in error positions.
func Parse(name string, src []byte) (*Scenario, error) {
	if len(src) > MaxFileSize {
		return nil, &Error{File: name, Msg: fmt.Sprintf("is %d bytes; a scenario file may be at most %d", len(src), MaxFileSize)}
	}
	tree, err := parseYAML(name, src)
	if err != nil {
		return nil, err
	}
	if len(tree.Docs) == 1 && tree.Docs[0].Body != nil {
		// Aliases can nest into an exponential blow-up of a few hundred
		// bytes, and tags can make the decoder crash (a tagged mapping
		// where a list belongs); a scenario needs neither.
		var odd oddFinder
		ast.Walk(&odd, tree.Docs[0].Body)
		if odd.found != nil {
			pos := odd.found.GetToken().Position
			msg := "YAML aliases (*name) are not allowed in a scenario; write the value out"
			if odd.found.Type() == ast.TagType {
				msg = "YAML tags (!name) are not allowed in a scenario; write the plain value"
			}
			return nil, posError(name, pos.Line, pos.Column, msg)
		}
	}
	if len(tree.Docs) != 1 || tree.Docs[0].Body == nil {
		return nil, &Error{File: name, Msg: "want exactly one YAML document holding a mapping with name, window, ttl, initial, events and expect"}
	}
	if _, ok := tree.Docs[0].Body.(*ast.MappingNode); !ok {
		if _, ok := tree.Docs[0].Body.(*ast.MappingValueNode); !ok {
			tok := tree.Docs[0].Body.GetToken()
			return nil, posError(name, tok.Position.Line, tok.Position.Column, "want a mapping with name, window, ttl, initial, events and expect")
		}
	}
	var raw file
	if err := decodeYAML(name, tree.Docs[0].Body, &raw); err != nil {
		return nil, err
	}
	raw.path, raw.src, raw.ast = name, src, tree
	return build(&raw, name, nil)
}

// parseYAML parses src into a syntax tree. The YAML library has crashed on
// inputs found by fuzzing; a crash becomes a refusal of the file, since a
// scenario file must never bring leaserace down.
func parseYAML(name string, src []byte) (tree *ast.File, err error) {
	defer func() {
		if v := recover(); v != nil {
			tree, err = nil, &Error{File: name, Msg: fmt.Sprintf("is not YAML that leaserace can read (the YAML parser failed: %v)", v)}
		}
	}()
	tokens := lexer.Tokenize(string(src))
	if tok := tooDeep(tokens, maxYAMLNesting); tok != nil {
		return nil, posError(name, tok.Position.Line, tok.Position.Column,
			fmt.Sprintf("nests more than %d levels deep here; a scenario needs a handful", maxYAMLNesting))
	}
	tree, err = parser.Parse(tokens, 0)
	if err != nil {
		return nil, yamlError(name, err)
	}
	return tree, nil
}

// maxYAMLNesting bounds nesting before the parser sees a file: its time
// grows with the square of the depth (a 200 KB file of brackets took
// minutes), while lexing is linear.
const maxYAMLNesting = 4 * MaxValueDepth

// tooDeep returns the first token at which the file may nest more than
// limit levels, or nil. Flow collections ([ and {) are counted exactly; block
// nesting is counted by the indicators (-, ?, :) on one line, since nesting
// by indentation costs a column per level and a megabyte holds too few
// such levels to matter. It may overcount, never undercount, what the
// parser would build from flow collections and compact entries.
func tooDeep(tokens token.Tokens, limit int) *token.Token {
	flow, line, onLine := 0, -1, 0
	for _, tok := range tokens {
		if tok.Position == nil {
			continue
		}
		if tok.Position.Line != line {
			line, onLine = tok.Position.Line, 0
		}
		switch tok.Type {
		case token.SequenceStartType, token.MappingStartType:
			flow++
		case token.SequenceEndType, token.MappingEndType:
			flow = max(flow-1, 0)
		case token.SequenceEntryType, token.MappingKeyType, token.MappingValueType:
			if flow == 0 {
				onLine++
			}
		}
		if flow+onLine > limit {
			return tok
		}
	}
	return nil
}

// decodeYAML decodes a document into raw, refusing unknown fields; like
// parseYAML it turns a crash of the library into a refusal.
func decodeYAML(name string, body ast.Node, raw *file) (err error) {
	defer func() {
		if v := recover(); v != nil {
			e := &Error{File: name, Msg: fmt.Sprintf("has a shape leaserace cannot read (the YAML decoder failed: %v); compare it with a built-in scenario, `leaserace scenarios --show renewal-race`", v)}
			if tok := body.GetToken(); tok != nil && tok.Position != nil {
				e.Line, e.Column = tok.Position.Line, tok.Position.Column
			}
			err = e
		}
	}()
	if err := yaml.NodeToValue(body, raw, yaml.DisallowUnknownField()); err != nil {
		return yamlError(name, err)
	}
	return nil
}

// oddFinder remembers the first alias or tag node in a tree.
type oddFinder struct{ found ast.Node }

func (a *oddFinder) Visit(n ast.Node) ast.Visitor {
	if a.found != nil {
		return nil
	}
	if t := n.Type(); t == ast.AliasType || t == ast.TagType {
		a.found = n
		return nil
	}
	return a
}

func posError(file string, line, col int, msg string) *Error {
	return &Error{File: file, Line: line, Column: col, Msg: msg}
}

func yamlError(name string, err error) error {
	var ne *nodeError
	if errors.As(err, &ne) {
		if tok := ne.tok; tok != nil && tok.Position != nil {
			return posError(name, tok.Position.Line, tok.Position.Column, keyed(tok, ne.msg))
		}
		return &Error{File: name, Msg: ne.msg}
	}
	var ye yaml.Error
	if errors.As(err, &ye) {
		msg := ye.GetMessage()
		var (
			te *yaml.TypeError
			ne *yaml.UnexpectedNodeTypeError
		)
		// The decoder words these in Go's types; say them in YAML's. (Its
		// overflow errors cannot come: every integer field is a whole.)
		switch {
		case errors.As(err, &te):
			msg = keyed(te.Token, fmt.Sprintf("want %s, found %s", typeWords(te.DstType), typeWords(te.SrcType)))
		case errors.As(err, &ne):
			msg = keyed(ne.Token, fmt.Sprintf("want %s, found %s", nodeWords(ne.Expected), nodeWords(ne.Actual)))
		}
		var uf *yaml.UnknownFieldError
		if errors.As(err, &uf) {
			msg += " (allowed here: see the fields in a built-in scenario, `leaserace scenarios --show renewal-race`)"
		}
		if tok := ye.GetToken(); tok != nil && tok.Position != nil {
			return posError(name, tok.Position.Line, tok.Position.Column, msg)
		}
		return &Error{File: name, Msg: msg}
	}
	return &Error{File: name, Msg: err.Error()}
}

// keyed puts the key whose value tk starts before msg, when tk is a
// mapping's value: "ttl: want a whole number, found text".
func keyed(tk *token.Token, msg string) string {
	if tk != nil && tk.Prev != nil && tk.Prev.Type == token.MappingValueType && tk.Prev.Prev != nil && tk.Prev.Prev.Value != "" {
		return tk.Prev.Prev.Value + ": " + msg
	}
	return msg
}

// typeWords names what a Go type holds in YAML's words.
func typeWords(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "text"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	}
	return "a value"
}

// nodeWords names a YAML node's kind.
func nodeWords(n ast.NodeType) string {
	switch n {
	case ast.NullType:
		return "nothing (null)"
	case ast.BoolType:
		return "true or false"
	case ast.IntegerType:
		return "a whole number"
	case ast.FloatType, ast.InfinityType, ast.NanType:
		return "a number"
	case ast.StringType, ast.LiteralType:
		return "text"
	case ast.MappingType, ast.MappingKeyType, ast.MappingValueType:
		return "a mapping"
	case ast.SequenceType, ast.SequenceEntryType:
		return "a list"
	}
	return "a value"
}

// at finds the line and column of a YAML path such as $.events[2].t.
func (f *file) at(path string) (int, int) {
	if f.ast == nil {
		return 0, 0
	}
	p, err := yaml.PathString(path)
	if err != nil {
		return 0, 0
	}
	n, err := p.FilterFile(f.ast)
	if err != nil || n == nil {
		return 0, 0
	}
	// A block mapping's token is its first key's colon; a person looks
	// for where its first key starts.
	switch m := n.(type) {
	case *ast.MappingNode:
		if !m.IsFlowStyle && len(m.Values) > 0 && m.Values[0].Key != nil {
			n = m.Values[0].Key
		}
	case *ast.MappingValueNode:
		if m.Key != nil {
			n = m.Key
		}
	}
	if n.GetToken() == nil || n.GetToken().Position == nil {
		return 0, 0
	}
	pos := n.GetToken().Position
	return pos.Line, pos.Column
}

// fenceKey is the fence a mapping at path gives, and the key it gives it
// under: fence, or epoch, its name in files written before the key took
// the word the screen uses. Both at once is an error.
func (f *file) fenceKey(path string, fence, epoch *whole) (*whole, string, error) {
	switch {
	case fence != nil && epoch != nil:
		return nil, "", f.errAt(path+".epoch", "fence and epoch are one value (epoch is its old name): give fence only")
	case epoch != nil:
		return epoch, "epoch", nil
	}
	return fence, "fence", nil
}

// errAt is an error at a YAML path; when the path is not in the file (a
// missing field), at its nearest enclosing node that is.
func (f *file) errAt(path, format string, args ...any) *Error {
	l, c := f.at(path)
	for l == 0 && path != "$" && path != "" {
		path = parentPath(path)
		l, c = f.at(path)
	}
	return &Error{File: f.path, Line: l, Column: c, Msg: fmt.Sprintf(format, args...)}
}

// parentPath is the path one level up: $.events[2].ask → $.events[2] → $.events.
func parentPath(path string) string {
	if strings.HasSuffix(path, "]") {
		if i := strings.LastIndexByte(path, '['); i > 0 {
			return path[:i]
		}
	}
	if i := strings.LastIndexByte(path, '.'); i > 0 {
		return path[:i]
	}
	return "$"
}

var (
	nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
	// Actors are shown in panes and application_name; keep them short and plain.
	actorRE   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,15}$`)
	timeRE    = regexp.MustCompile(`^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:([+-])\s*([0-9]+))?\s*$`)
	timeNameR = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,31}$`)
)

// Logical times stay far from int64's edges so now + ttl cannot overflow.
const maxTime = math.MaxInt64 / 4

// build resolves and validates; override replaces named times (for explore).
func build(raw *file, source string, override map[string]int64) (*Scenario, error) {
	s := &Scenario{Source: source, raw: raw}
	if !nameRE.MatchString(raw.Name) {
		return nil, raw.errAt("$.name", "name %q: want lowercase letters, digits and dashes, 1-63 characters, starting with a letter or digit", raw.Name)
	}
	s.Name, s.Title, s.Description = raw.Name, raw.Title, raw.Description
	if s.Title == "" {
		s.Title = s.Name
	}
	s.Lease = raw.Lease
	if s.Lease == "" {
		s.Lease = defaultLeaseKey
	}
	if len(s.Lease) > 63 {
		return nil, raw.errAt("$.lease", "lease name is %d characters; at most 63", len(s.Lease))
	}
	if raw.Window == nil {
		return nil, &Error{File: raw.path, Msg: "missing window: want window: {from: T, to: T}"}
	}
	if raw.Window.From < 0 || raw.Window.To > maxTime || raw.Window.To <= raw.Window.From {
		return nil, raw.errAt("$.window", "window %d..%d: want 0 <= from < to <= %d", raw.Window.From, raw.Window.To, int64(maxTime))
	}
	s.Window = Window{From: int64(raw.Window.From), To: int64(raw.Window.To)}
	if raw.TTL == nil {
		return nil, &Error{File: raw.path, Msg: "missing ttl: want the lease time-to-live in logical ticks, e.g. ttl: 60"}
	}
	if *raw.TTL <= 0 || *raw.TTL > maxTime {
		return nil, raw.errAt("$.ttl", "ttl %d: want a positive number of ticks", *raw.TTL)
	}
	s.TTL = int64(*raw.TTL)

	s.Times = map[string]int64{}
	for n, v := range raw.Times {
		if !timeNameR.MatchString(n) {
			return nil, raw.errAt("$.times", "time name %q: want a letter or _ then letters, digits or _", n)
		}
		s.Times[n] = int64(v)
	}
	for n, v := range override {
		s.Times[n] = int64(v)
	}
	for n, v := range s.Times {
		if v < 0 || v > maxTime {
			return nil, raw.errAt("$.times."+n, "time %s = %d: want 0..%d", n, v, int64(maxTime))
		}
	}

	if c := raw.Initial.Coordinator; c != nil {
		l, err := raw.lease(c, "$.initial.coordinator", true)
		if err != nil {
			return nil, err
		}
		s.Initial = &l
	}
	s.Resource = ResourceState{Value: json.RawMessage("null")}
	if r := raw.Initial.Resource; r != nil {
		fence, key, err := raw.fenceKey("$.initial.resource", r.Fence, r.Epoch)
		if err != nil {
			return nil, err
		}
		if fence == nil {
			return nil, raw.errAt("$.initial.resource", "initial.resource needs fence: the resource's highest fence accepted at the start")
		}
		if *fence < 0 {
			return nil, raw.errAt("$.initial.resource."+key, "%s %d: fences are nonnegative", key, *fence)
		}
		v, err := jsonValue(r.Value)
		if err != nil {
			return nil, raw.errAt("$.initial.resource.value", "value: %v", err)
		}
		s.Resource = ResourceState{Fence: int64(*fence), Value: v}
	}

	if len(raw.Events) == 0 {
		return nil, &Error{File: raw.path, Msg: "no events: a scenario needs at least one event"}
	}
	if len(raw.Events) > MaxEvents {
		return nil, raw.errAt("$.events", "%d events; at most %d", len(raw.Events), MaxEvents)
	}
	for i, fe := range raw.Events {
		ev, err := raw.event(s, i, fe)
		if err != nil {
			return nil, err
		}
		s.Events = append(s.Events, ev)
	}
	sort.SliceStable(s.Events, func(i, j int) bool { return s.Events[i].T < s.Events[j].T })
	if err := raw.checkTimeline(s); err != nil {
		return nil, err
	}
	if err := raw.checkAskOwners(s); err != nil {
		return nil, err
	}
	goals, err := raw.goalList()
	if err != nil {
		return nil, err
	}
	s.goals = goals

	for i, fx := range raw.Expect {
		ex, err := raw.expect(i, fx)
		if err != nil {
			return nil, err
		}
		s.Expect = append(s.Expect, ex)
	}
	for _, k := range AllKnobs() {
		var hits []int
		for i, e := range s.Expect {
			if e.Matches(k) {
				hits = append(hits, i)
			}
		}
		switch {
		case len(hits) == 0:
			return nil, raw.errAt("$.expect", "no expectation for renewal %s with fencing %s: every one of the six settings needs exactly one (\"*\" matches all)", k.Renewal, k.Fencing)
		case len(hits) > 1:
			return nil, raw.errAt(fmt.Sprintf("$.expect[%d]", hits[1]), "expect[%d] and expect[%d] both match renewal %s with fencing %s: each setting needs exactly one", hits[0], hits[1], k.Renewal, k.Fencing)
		}
	}
	return s, nil
}

func (f *file) lease(c *fileLease, path string, full bool) (Lease, error) {
	var l Lease
	if !actorRE.MatchString(c.Owner) {
		return l, f.errAt(path+".owner", "owner %q: want a short actor name such as A or B (letters, digits, _ or -, at most 16)", c.Owner)
	}
	l.Owner = c.Owner
	need := func(v *whole, field string) (int64, error) {
		if v == nil {
			if full {
				return 0, f.errAt(path, "missing %s", field)
			}
			return 0, nil
		}
		if *v < 0 || *v > maxTime {
			return 0, f.errAt(path+"."+field, "%s %d: want 0..%d", field, *v, int64(maxTime))
		}
		return int64(*v), nil
	}
	var err error
	if l.Fence, err = need(c.Fence, "fence"); err != nil {
		return l, err
	}
	if l.LeaseVersion, err = need(c.LeaseVersion, "lease_version"); err != nil {
		return l, err
	}
	if l.ExpiresAt, err = need(c.ExpiresAt, "expires_at"); err != nil {
		return l, err
	}
	return l, nil
}

func (f *file) expect(i int, fx fileExpect) (Expectation, error) {
	p := fmt.Sprintf("$.expect[%d]", i)
	ex := Expectation{Renewal: fx.Renewal, Fencing: fx.Fencing, Verdict: fx.Verdict}
	if l, c := f.at(p); l > 0 {
		ex.Pos = fmt.Sprintf("%d:%d", l, c)
	}
	if ex.Renewal != "*" {
		if _, err := ParseRenewal(ex.Renewal); err != nil {
			return ex, f.errAt(p+".renewal", "expect[%d]: %v (or \"*\")", i, err)
		}
	}
	if ex.Fencing != "*" {
		if _, err := ParseFencing(ex.Fencing); err != nil {
			return ex, f.errAt(p+".fencing", "expect[%d]: %v (or \"*\")", i, err)
		}
	}
	if fx.Effects == nil || *fx.Effects < 0 {
		return ex, f.errAt(p, "expect[%d]: needs effects: N (accepted effects at the resource, N >= 0)", i)
	}
	ex.Effects = int(*fx.Effects)
	if !slices.Contains(Verdicts(), ex.Verdict) {
		return ex, f.errAt(p+".verdict", "expect[%d]: verdict %q: want conflict, blocked or safe", i, fx.Verdict)
	}
	if fx.Coordinator != nil {
		l, err := f.lease(fx.Coordinator, p+".coordinator", true)
		if err != nil {
			return ex, err
		}
		ex.Coordinator = &l
	}
	if r := fx.Resource; r != nil {
		fence, _, err := f.fenceKey(p+".resource", r.Fence, r.Epoch)
		if err != nil {
			return ex, err
		}
		if fence == nil || *fence < 0 {
			return ex, f.errAt(p+".resource", "expect[%d]: resource needs a nonnegative fence", i)
		}
		er := &ExpectedResource{Fence: int64(*fence)}
		if r.Value != nil {
			v, err := jsonValue(r.Value)
			if err != nil {
				return ex, f.errAt(p+".resource.value", "expect[%d]: value: %v", i, err)
			}
			er.Value = v
		}
		ex.Resource = er
	}
	return ex, nil
}

// resolveTime turns 1070, "1070", "arrival" or "arrival+5" into a time.
func resolveTime(v any, times map[string]int64) (int64, string, error) {
	switch x := v.(type) {
	case nil:
		return 0, "", errors.New("missing t: want a logical time such as 1070 or a named time such as arrival+5")
	case int64:
		return checkT(x, strconv.FormatInt(x, 10))
	case uint64:
		if x > maxTime {
			return 0, "", fmt.Errorf("t %d is too large", x)
		}
		return checkT(int64(x), strconv.FormatUint(x, 10))
	case int:
		return checkT(int64(x), strconv.Itoa(x))
	case string:
		if n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil {
			return checkT(n, x)
		}
		m := timeRE.FindStringSubmatch(x)
		if m == nil {
			return 0, "", fmt.Errorf("t %q: want a number or NAME, NAME+K or NAME-K", x)
		}
		base, ok := times[m[1]]
		if !ok {
			return 0, "", fmt.Errorf("t %q names %q, which is not in times", x, m[1])
		}
		if m[2] != "" {
			k, err := strconv.ParseInt(m[3], 10, 64)
			if err != nil || k > maxTime {
				return 0, "", fmt.Errorf("t %q: offset too large", x)
			}
			if m[2] == "-" {
				k = -k
			}
			base += k
		}
		return checkT(base, x)
	default:
		return 0, "", fmt.Errorf("t %v: want a whole number or a named time", v)
	}
}

func checkT(t int64, expr string) (int64, string, error) {
	if t < 0 || t > maxTime {
		return 0, "", fmt.Errorf("t %s = %d: want 0..%d", expr, t, int64(maxTime))
	}
	return t, expr, nil
}

// jsonValue turns a decoded YAML value into canonical JSON.
func jsonValue(v any) (json.RawMessage, error) {
	b, err := MarshalPlain(normalize(v))
	if err != nil {
		return nil, fmt.Errorf("cannot be written as JSON: %w", err)
	}
	if err := CheckDepth(b, MaxValueDepth); err != nil {
		return nil, err
	}
	return b, nil
}

// normalize turns YAML's map[string]any / map[any]any into JSON-able maps.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	}
	return v
}
