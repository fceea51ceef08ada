package console

import (
	"strings"
	"testing"
)

// What keeps a phone's page (390 px) from scrolling sideways: the
// browser test (console/e2e/pages.mjs) finds such a page; these name the
// bugs it found.

// TestConfigFilePathFitsAPhone: the config page's file path is a
// <code> that breaks anywhere (the bug: a temporary directory's path made
// the page 514 px wide at 390 px).
func TestConfigFilePathFitsAPhone(t *testing.T) {
	e := newEnv(t, false)
	c, _ := e.login(viewerKey)
	_, page := e.do(c, "GET", "/console/config", nil)
	if !strings.Contains(page, `<code class="path" id="config-file">/etc/switchover.yaml</code>`) {
		t.Errorf("the config page's file path is not a code.path:\n%s", page)
	}
	if got := cssRule(t, consoleCSS(t), "code.path")["overflow-wrap"]; got != "anywhere" {
		t.Errorf("code.path's overflow-wrap is %q, not anywhere", got)
	}
}

// TestConfirmDialogFitsAPhone: the confirmation dialog is no wider than
// the window and breaks a long word (the bug: the reload's confirmation,
// which names the file's path, was 476 px wide at 390 px, its buttons
// partly outside the window, because the dialog's max-width of 34em
// replaced the browser's own limit to the window).
func TestConfirmDialogFitsAPhone(t *testing.T) {
	css := consoleCSS(t)
	if got := cssRule(t, css, "dialog")["max-width"]; !strings.Contains(got, "100vw") {
		t.Errorf("the dialog's max-width %q does not depend on the window's width", got)
	}
	if got := cssRule(t, css, "#confirm-text")["overflow-wrap"]; got != "anywhere" {
		t.Errorf("#confirm-text's overflow-wrap is %q, not anywhere", got)
	}
}

func consoleCSS(t *testing.T) string {
	t.Helper()
	b, err := staticFS.ReadFile("static/console.css")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
