package console

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"net/http"
)

// favicon is the console's icon, a 32×32 PNG drawn once: two bars, the
// lower one switched over, in the header's colours. Browsers ask for
// /favicon.ico on every page; it is answered without a session (it says
// nothing of the gateway).
var favicon = func() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 32, 32))
	bg, fg, hi := color.RGBA{0x17, 0x21, 0x2b, 0xff}, color.RGBA{0xcf, 0xe3, 0xff, 0xff}, color.RGBA{0x2a, 0x9d, 0x8f, 0xff}
	for y := range 32 {
		for x := range 32 {
			c := bg
			switch {
			case y >= 8 && y < 13 && x >= 6 && x < 22:
				c = fg
			case y >= 19 && y < 24 && x >= 10 && x < 26:
				c = hi
			}
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	return b.Bytes()
}()

// serveFavicon answers /favicon.ico.
func serveFavicon(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Cache-Control", "max-age=86400")
	w.Write(favicon)
}
