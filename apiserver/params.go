package apiserver

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	restful "github.com/emicklei/go-restful/v3"
)

// maxQueryLength bounds free-text query parameters.
const maxQueryLength = 100

// queryEnum reads a parameter that must be one of allowed; empty gives def.
func queryEnum(req *restful.Request, fe fieldErrors, name, def string, allowed ...string) string {
	v := req.QueryParameter(name)
	if v == "" {
		return def
	}
	if !slices.Contains(allowed, v) {
		fe.add(name, "The "+name+" must be one of: "+strings.Join(allowed, ", ")+".")
		return def
	}
	return v
}

// queryInt reads an integer parameter within [min, max]; empty gives def.
func queryInt(req *restful.Request, fe fieldErrors, name string, def, min, max int) int {
	v := req.QueryParameter(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		fe.add(name, "The "+name+" must be an integer.")
		return def
	}
	if n < min {
		fe.add(name, "The "+name+" must be at least "+strconv.Itoa(min)+".")
		return def
	}
	if max > 0 && n > max {
		fe.add(name, "The "+name+" may not be greater than "+strconv.Itoa(max)+".")
		return def
	}
	return n
}

// queryText reads a free-text parameter of bounded length.
func queryText(req *restful.Request, fe fieldErrors, name string) string {
	v := strings.TrimSpace(req.QueryParameter(name))
	if !storableText(v) {
		fe.add(name, "The "+name+" must be UTF-8 text without NUL characters.")
		return ""
	}
	if utf8.RuneCountInString(v) > maxQueryLength {
		fe.add(name, "The "+name+" may not be longer than "+strconv.Itoa(maxQueryLength)+" characters.")
		return ""
	}
	return v
}

// queryDate reads a YYYY-MM-DD parameter; ok is false when absent or invalid.
func queryDate(req *restful.Request, fe fieldErrors, name string) (time.Time, bool) {
	v := req.QueryParameter(name)
	if v == "" {
		return time.Time{}, false
	}
	d, err := time.Parse(time.DateOnly, v)
	if err != nil {
		fe.add(name, "The "+name+" must be a date in the form YYYY-MM-DD.")
		return time.Time{}, false
	}
	return d, true
}

// storableText reports whether s can be stored as PostgreSQL text, which holds neither
// invalid UTF-8 nor NUL bytes; anything else makes the query fail (a 500), not match nothing.
func storableText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// storableIDs is a route filter answering 404 for a path id that cannot be stored text, or
// that does not have the form its parameter declares (Pattern, MaxLength; see idParam): no
// record has such an id. protect adds it after authorize to every route, so a missing
// permission is still a 403 first.
func storableIDs(req *restful.Request, resp *restful.Response, chain *restful.FilterChain) {
	for name, v := range req.PathParameters() {
		if !storableText(v) || !declaredForm(chain.ParameterDocs, name, v) {
			notFound(resp, pathRecordNoun(name))
			return
		}
	}
	chain.ProcessFilter(req, resp)
}

// declaredForm reports whether v fits the length and pattern declared for path parameter name
// (true when none is declared).
func declaredForm(params []*restful.Parameter, name, v string) bool {
	for _, p := range params {
		d := p.Data()
		if d.Kind != restful.PathParameterKind || d.Name != name {
			continue
		}
		if d.MaxLength != nil && int64(len(v)) > *d.MaxLength {
			return false
		}
		return d.Pattern == "" || compiledPattern(d.Pattern).MatchString(v)
	}
	return true
}

var idPatterns sync.Map // pattern -> *regexp.Regexp

func compiledPattern(pattern string) *regexp.Regexp {
	if re, ok := idPatterns.Load(pattern); ok {
		return re.(*regexp.Regexp)
	}
	re, _ := idPatterns.LoadOrStore(pattern, regexp.MustCompile(pattern))
	return re.(*regexp.Regexp)
}

// Forms of ids that name Kubernetes objects. A WebhookEndpoint's id is its name, a DNS-1123
// subdomain (lower case, '.', '-'; what kubectl may also create); the client refuses
// anything else ('%', '.', "..", upper case, too long) before sending it.
const (
	kubeNamePattern   = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	kubeNameMaxLength = 253
	uuidPattern       = `^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`
	uuidMaxLength     = 36
)

// idParam declares a path id of a declared form: storableIDs answers 404 to any other.
func idParam(ws *restful.WebService, name, description, pattern string, maxLength int64) *restful.Parameter {
	return ws.PathParameter(name, description).DataType("string").Pattern(pattern).MaxLength(maxLength)
}

// pathRecordNoun names, for a 404 message, the record a path parameter identifies. Parameters
// are named after it ("call"), except these.
func pathRecordNoun(param string) string {
	switch param {
	case "task":
		return "to-do"
	case "eventId":
		return "delivery"
	}
	return param
}

// Parameter builders, so every route documents its parameters the same way.

func pageParams(ws *restful.WebService, maxPerPage, defPerPage int) []*restful.Parameter {
	return []*restful.Parameter{
		ws.QueryParameter("page", "Page number, from 1.").DataType("integer").DefaultValue("1").Minimum(1),
		ws.QueryParameter("per_page", "Page size, 1 to "+strconv.Itoa(maxPerPage)+".").DataType("integer").
			DefaultValue(strconv.Itoa(defPerPage)).Minimum(1).Maximum(float64(maxPerPage)),
	}
}

func enumParam(ws *restful.WebService, name, desc string, values ...string) *restful.Parameter {
	m := make(map[string]string, len(values))
	for _, v := range values {
		m[v] = v
	}
	return ws.QueryParameter(name, desc).DataType("string").AllowableValues(m)
}

// searchDigits keeps the digits of a phone-number search ("+44 20 7946" gives "44207946"),
// which match as part of an E.164 number. National forms ("07...") are not rewritten.
func searchDigits(q string) string {
	var b strings.Builder
	for _, r := range q {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}
