package apiserver

import (
	"reflect"
	"testing"

	restful "github.com/emicklei/go-restful/v3"
)

// A parameter's allowed values become an enum tag the reflector reads as typed values: numbers
// in numeric order for an integer, sorted names for text; an integer parameter that allows a
// word is a mistake in the route table, reported instead of described.
func TestParamsStructEnums(t *testing.T) {
	cases := map[string]struct {
		param   *restful.Parameter
		want    string
		wantErr bool
	}{
		"integer": {param: restful.QueryParameter("days", "").DataType("integer").
			AllowableValues(map[string]string{"7": "7", "30": "30", "90": "90"}), want: "[7,30,90]"},
		"text": {param: restful.QueryParameter("status", "").DataType("string").
			AllowableValues(map[string]string{"open": "open", "done": "done"}), want: "done,open"},
		"integer allowing a word": {param: restful.QueryParameter("days", "").DataType("integer").
			AllowableValues(map[string]string{"7": "7", "week": "week"}), wantErr: true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			params, err := paramsStruct([]*restful.Parameter{c.param})
			if c.wantErr {
				if err == nil {
					t.Fatalf("no error; params %T", params)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := reflect.TypeOf(params).Elem().Field(0).Tag.Get("enum")
			if got != c.want {
				t.Errorf("enum tag = %q, want %q", got, c.want)
			}
		})
	}
}
