// Command pngdiff compares two PNG screenshots for .ci/run's pictures
// phase: the same size, and at most a small share of pixels different.
// A browser's rasteriser may move a glyph's antialiasing by one step between
// builds or font packages; a changed layout or colour moves far more pixels
// than that (one changed word may not: the page's own tests check words).
//
//	go run ./.ci/pngdiff WANT.png GOT.png
//
// Exit 0: alike; 1: different (it says how); 2: a file is no PNG.
package main

import (
	"fmt"
	"image"
	"image/png"
	"os"
)

// maxShare is the share of pixels that may differ: 0.2 % of a 1280×1000
// screenshot is 2,560 pixels, about one short word.
const maxShare = 0.002

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: pngdiff WANT.png GOT.png")
		os.Exit(2)
	}
	want, err := load(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	got, err := load(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if want.Bounds() != got.Bounds() {
		fmt.Printf("%s is %v, %s is %v\n", os.Args[1], want.Bounds().Size(), os.Args[2], got.Bounds().Size())
		os.Exit(1)
	}
	b := want.Bounds()
	diff := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r1, g1, b1, a1 := want.At(x, y).RGBA()
			r2, g2, b2, a2 := got.At(x, y).RGBA()
			if r1 != r2 || g1 != g2 || b1 != b2 || a1 != a2 {
				diff++
			}
		}
	}
	share := float64(diff) / float64(b.Dx()*b.Dy())
	if share > maxShare {
		fmt.Printf("%d pixels differ (%.2f %%, at most %.2f %% may)\n", diff, 100*share, 100*maxShare)
		os.Exit(1)
	}
	fmt.Printf("%d pixels differ (%.3f %%): alike\n", diff, 100*share)
}

func load(name string) (image.Image, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return img, nil
}
