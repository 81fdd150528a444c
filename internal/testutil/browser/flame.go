package browser

import (
	"context"
	"fmt"
	"time"

	"github.com/chromedp/chromedp"
)

// Frame is one frame of stax web's flame graph as the page drew it. X, Y, W, H are CSS
// pixels in the viewport (from window.staxFrames); Drawn is the width its pixels take on the
// canvas, measured from the image, not from the page's own geometry.
type Frame struct {
	Func     string  `json:"func"`
	Image    string  `json:"image"`
	Kind     string  `json:"kind"`
	Total    float64 `json:"total"`
	Self     float64 `json:"self"`
	Match    bool    `json:"match"`
	Ancestor bool    `json:"ancestor"`
	Selected bool    `json:"selected"`
	Depth    int     `json:"depth"`
	// Change is the frame's change of share against a diff's base, in percentage points;
	// absent without a diff.
	Change *float64 `json:"change"`
	X      float64  `json:"x"`
	Y      float64  `json:"y"`
	W      float64  `json:"w"`
	H      float64  `json:"h"`
	Drawn  float64  `json:"drawn"`
}

// framesJS returns the frames with their drawn widths: on the canvas row one pixel below
// the frame's top (above its label), the run of painted pixels through the frame's centre.
// Frames are separated by a one-pixel gap, which counts as the frame's own.
const framesJS = `(() => {
	const frames = window.staxFrames ? window.staxFrames() : [];
	const canvas = document.querySelector("#flame canvas");
	if (!canvas || frames.length === 0) return [];
	const box = canvas.getBoundingClientRect();
	const dpr = canvas.width / box.width;
	const g = canvas.getContext("2d");
	const rows = new Map();
	for (const f of frames) {
		const py = Math.round((f.y - box.top + 1) * dpr);
		let row = rows.get(py);
		if (!row) {
			row = g.getImageData(0, py, canvas.width, 1).data;
			rows.set(py, row);
		}
		const painted = (px) => px >= 0 && px < canvas.width && row[px * 4 + 3] > 0;
		let l = Math.floor((f.x - box.left + f.w / 2) * dpr), r = l;
		if (!painted(l)) { f.drawn = 0; continue; }
		while (painted(l - 1)) l--;
		while (painted(r + 1)) r++;
		f.drawn = (r - l + 2) / dpr;
	}
	return frames;
})()`

// Frames returns the flame graph's frames as drawn.
func Frames(ctx context.Context) ([]Frame, error) {
	return chromedp.Run(ctx, chromedp.Evaluate[[]Frame](framesJS))
}

// WaitFrames polls until a drawn frame satisfies ok, and returns the frames then; at ctx's
// end it returns the last frames read and an error.
func WaitFrames(ctx context.Context, ok func(Frame) bool) ([]Frame, error) {
	for {
		frames, err := Frames(ctx)
		for _, f := range frames {
			if f.Drawn > 0 && ok(f) {
				return frames, nil
			}
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = ctx.Err()
			}
			return frames, fmt.Errorf("no flame graph frame as wanted (%d frames): %w", len(frames), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ClickFrame scrolls the first drawn frame that ok accepts into view and clicks its centre.
func ClickFrame(ctx context.Context, ok func(Frame) bool) error {
	frames, err := WaitFrames(ctx, ok)
	if err != nil {
		return err
	}
	i := 0
	for i = range frames {
		if frames[i].Drawn > 0 && ok(frames[i]) {
			break
		}
	}
	f := frames[i]
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(window.scrollBy(0, %f - window.innerHeight / 2), true)`, f.Y))); err != nil {
		return err
	}
	// Read the frame again: scrolling moved it.
	frames, err = Frames(ctx)
	if err != nil {
		return err
	}
	if i >= len(frames) || frames[i].Func != f.Func || frames[i].X != f.X {
		return fmt.Errorf("the flame graph changed while scrolling to %s", f.Func)
	}
	g := frames[i]
	return chromedp.Do(ctx, chromedp.MouseClickXY(g.X+g.W/2, g.Y+g.H/2))
}
