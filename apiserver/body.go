package apiserver

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	restful "github.com/emicklei/go-restful/v3"
)

// maxBodyBytes bounds request bodies; the bulk upsert of contacts has its own bound.
const maxBodyBytes = 4 << 20

// readJSON decodes the request body into dst. On failure it writes the response
// (415, 400, 413 or 422) and returns false: malformed JSON is never a 500.
func readJSON(req *restful.Request, resp *restful.Response, dst any) bool {
	return readJSONWithin(req, resp, dst, maxBodyBytes)
}

// readJSONWithin is readJSON for a body of at most limit bytes.
func readJSONWithin(req *restful.Request, resp *restful.Response, dst any, limit int64) bool {
	ct := req.HeaderParameter("Content-Type")
	if ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != restful.MIME_JSON {
			writeError(resp, http.StatusUnsupportedMediaType, "Send the body as JSON with Content-Type: application/json.")
			return false
		}
	}
	body := http.MaxBytesReader(resp.ResponseWriter, req.Request.Body, limit)
	dec := json.NewDecoder(body)
	err := dec.Decode(dst)
	if err == nil && dec.More() {
		err = errors.New("trailing data")
	}
	if err == nil {
		return true
	}
	var typeErr *json.UnmarshalTypeError
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			// Every 422 has the spec's {message, errors} shape; the body itself is the field.
			writeValidation(resp, fieldErrors{"body": {"The body must be a JSON object."}})
			return false
		}
		writeValidation(resp, fieldErrors{field: {"The " + lastSegment(field) + " must be " + jsonKind(typeErr.Type.Kind().String()) + "."}})
	case errors.As(err, &maxErr):
		writeError(resp, http.StatusRequestEntityTooLarge, "The body is too large.")
	case errors.Is(err, io.EOF):
		writeError(resp, http.StatusBadRequest, "The body is empty; send a JSON object.")
	default:
		writeError(resp, http.StatusBadRequest, "The body is not valid JSON.")
	}
	return false
}

func lastSegment(field string) string {
	if i := strings.LastIndex(field, "."); i >= 0 {
		return field[i+1:]
	}
	return field
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	default:
		return "a number"
	}
}
