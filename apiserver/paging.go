package apiserver

import (
	"math"
	"net/url"
	"strconv"

	restful "github.com/emicklei/go-restful/v3"
)

// Page is the spec's paged envelope.
type Page[T any] struct {
	Data        []T     `json:"data" required:"true"`
	CurrentPage int     `json:"current_page" required:"true"`
	LastPage    int     `json:"last_page" required:"true"`
	PerPage     int     `json:"per_page" required:"true"`
	Total       int     `json:"total" required:"true"`
	NextPageURL *string `json:"next_page_url" required:"true"`
	PrevPageURL *string `json:"prev_page_url" required:"true"`
}

// Paging is a validated page request.
type Paging struct {
	Page    int
	PerPage int
}

// Offset is the number of records before this page. A page so far out that the product would
// overflow gives the largest offset (an empty page), not a negative one (a database error).
func (p Paging) Offset() int {
	if p.PerPage > 0 && p.Page-1 > math.MaxInt/p.PerPage {
		return math.MaxInt
	}
	return (p.Page - 1) * p.PerPage
}

// parsePaging reads page and per_page with the operation's maximum and default.
func parsePaging(req *restful.Request, fe fieldErrors, maxPerPage, defPerPage int) Paging {
	return Paging{
		Page:    queryInt(req, fe, "page", 1, 1, 0),
		PerPage: queryInt(req, fe, "per_page", defPerPage, 1, maxPerPage),
	}
}

// pageOf builds the envelope; the links repeat the request's query with another page number.
// A page past the end has empty data, not an error.
func pageOf[T any](s *Server, req *restful.Request, p Paging, total int, data []T) Page[T] {
	if data == nil {
		data = []T{}
	}
	last := (total + p.PerPage - 1) / p.PerPage
	if last < 1 {
		last = 1
	}
	out := Page[T]{Data: data, CurrentPage: p.Page, LastPage: last, PerPage: p.PerPage, Total: total}
	if p.Page < last {
		out.NextPageURL = s.pageURL(req, p.Page+1)
	}
	if p.Page > 1 {
		prev := p.Page - 1
		if prev > last {
			prev = last
		}
		out.PrevPageURL = s.pageURL(req, prev)
	}
	return out
}

func (s *Server) pageURL(req *restful.Request, page int) *string {
	q := url.Values{}
	for k, v := range req.Request.URL.Query() {
		q[k] = v
	}
	q.Set("page", strconv.Itoa(page))
	u := s.cfg.BaseURL + req.Request.URL.Path + "?" + q.Encode()
	return &u
}
