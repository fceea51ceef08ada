package console

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/internal/cachepolicy"
	"github.com/switchover-gw/switchover/internal/keytext"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pages are the parsed templates, each page with the layout.
var pages = func() map[string]*template.Template {
	funcs := template.FuncMap{
		"when": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.UTC().Format("2006-01-02 15:04:05Z")
		},
		"pct": func(f *float64) string {
			if f == nil {
				return "–"
			}
			return fmt.Sprintf("%.0f%%", *f*100)
		},
		"ms": func(f *float64) string {
			if f == nil {
				return "–"
			}
			return fmt.Sprintf("%.0f ms", *f)
		},
		"usd":  usd,
		"list": func(s ...string) []string { return s },
		"pair": func(a, b any) []any { return []any{a, b} },
		"inc":  func(i int) int { return i + 1 },
		"path": url.PathEscape,
		// requestsAround is the request log's query for an event (requests.go).
		"requestsAround": requestsAround,
		"join":           strings.Join,
		// The text forms of a key's settings, as switchover keys and the
		// key forms take them ("" for none).
		"cacheText": func(p *cachepolicy.Policy) string {
			if p == nil {
				return ""
			}
			return p.String()
		},
		"requestLogText": keytext.RequestLog,
		"poolBudgets":    keytext.PoolBudgets,
		"metadataText":   keytext.Metadata,
		// budgetText and rfc3339 fill the key forms with what is in force.
		"budgetText": func(usd float64, period string) string {
			if usd == 0 {
				return ""
			}
			return strconv.FormatFloat(usd, 'f', -1, 64) + "/" + period
		},
		"amount": func(usd float64) string {
			if usd == 0 {
				return ""
			}
			return strconv.FormatFloat(usd, 'f', -1, 64)
		},
		"rfc3339": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.UTC().Format(time.RFC3339)
		},
		"describe": func(kind, pool, backend string) string {
			d := describe(Action{Kind: kind, Pool: pool, Backend: backend})
			return strings.ToUpper(d[:1]) + d[1:] + "."
		},
	}
	out := map[string]*template.Template{}
	names, _ := fs.Glob(templateFS, "templates/*.html")
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if name == "layout" {
			continue
		}
		out[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n))
	}
	return out
}()

// pageData is what every page's template gets.
type pageData struct {
	Page string
	User string
	Role string
	// Admin: the session may reload, manage keys and see end users;
	// Operator: it may act on the pools (an admin may too).
	Admin, Operator bool
	CSRF            string
	Flash           string
	Data            any
}

// render writes page name with data, scrubbed of every configured
// secret. s is the session (nil on the login page).
func (c *Console) render(w http.ResponseWriter, status int, name string, s *session, data any) {
	pd := pageData{Page: name, Data: data}
	if s != nil {
		pd.User, pd.Role, pd.Admin, pd.CSRF = s.User, s.Role, s.Role == RoleAdmin, s.CSRF
		pd.Operator = allows(s.Role, RoleOperator)
		pd.Flash = s.flashMsg
	}
	var buf bytes.Buffer
	if err := pages[name].ExecuteTemplate(&buf, "layout", pd); err != nil {
		c.log.Error("console: rendering failed", "page", name, "error", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(scrub(buf.Bytes(), c.gw.Config()))
}

// staticHandler serves the embedded scripts and styles.
func staticHandler() http.Handler {
	sub, _ := fs.Sub(staticFS, "static")
	fsrv := http.StripPrefix("/console/static/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // no directory listings
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		fsrv.ServeHTTP(w, r)
	})
}

// minSecret is the shortest secret scrubbed from output: shorter values
// (which validation refuses for keys) would blank ordinary text.
const minSecret = 6

// secrets returns every config.Secret value in cfg, longest first.
func secrets(cfg *config.Config) []string {
	var out []string
	seen := map[string]bool{}
	secretType := reflect.TypeOf(config.Secret(""))
	var walk func(v reflect.Value, depth int)
	walk = func(v reflect.Value, depth int) {
		if depth > 20 {
			return
		}
		if v.Type() == secretType {
			if s := v.String(); len(s) >= minSecret && !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
			return
		}
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem(), depth+1)
			}
		case reflect.Struct:
			for i := range v.NumField() {
				walk(v.Field(i), depth+1)
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i), depth+1)
			}
		case reflect.Map:
			it := v.MapRange()
			for it.Next() {
				walk(it.Value(), depth+1)
			}
		}
	}
	if cfg != nil {
		walk(reflect.ValueOf(cfg).Elem(), 0)
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// scrub replaces every configured secret in b, as written and as HTML
// or JSON escapes it, with [redacted]: templates never print a secret,
// and this makes sure that text from anywhere (an error message, an
// event's detail, a configuration diff) does not either.
func scrub(b []byte, cfg *config.Config) []byte {
	for _, s := range secrets(cfg) {
		for _, form := range []string{s, template.HTMLEscapeString(s), template.JSEscapeString(s), jsonEscape(s)} {
			if form != "" {
				b = bytes.ReplaceAll(b, []byte(form), []byte("[redacted]"))
			}
		}
	}
	return b
}

// jsonEscape is s as encoding/json writes it inside a string.
func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// usd prints dollars to the cent, and small amounts (a few requests'
// worth) to the micro-dollar so that they do not read as nothing.
func usd(f float64) string {
	if f != 0 && f < 1 && f > -1 {
		return fmt.Sprintf("$%.6f", f)
	}
	return fmt.Sprintf("$%.2f", f)
}
