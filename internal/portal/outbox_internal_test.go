package portal

import (
	"reflect"
	"testing"
)

func TestLinkify(t *testing.T) {
	const base = "http://127.0.0.1:8080"
	for _, tc := range []struct {
		name, body string
		want       []bodyPart
	}{
		{"no link", "Hello,\nnothing here\n", []bodyPart{{Text: "Hello,\nnothing here\n"}}},
		{"a sign-in link on its own line", "Acme:\nhttp://127.0.0.1:8080/portal/sign-in/link?token=abc&next=%2Fportal%2Fkeys\n\nBye",
			[]bodyPart{{Text: "Acme:\n"}, {Text: "http://127.0.0.1:8080/portal/sign-in/link?token=abc&next=%2Fportal%2Fkeys", Link: true}, {Text: "\n\nBye"}}},
		{"link at the very start and end", "http://127.0.0.1:8080/portal/", []bodyPart{{Text: "http://127.0.0.1:8080/portal/", Link: true}}},
		{"another origin stays text", "see https://evil.example/portal/x and http://127.0.0.1:8080.evil.example/x",
			[]bodyPart{{Text: "see https://evil.example/portal/x and http://127.0.0.1:8080.evil.example/x"}}},
		{"another port stays text", "http://127.0.0.1:80801/portal/", []bodyPart{{Text: "http://127.0.0.1:80801/portal/"}}},
		{"two links", "a http://127.0.0.1:8080/x b http://127.0.0.1:8080/y",
			[]bodyPart{{Text: "a "}, {Text: "http://127.0.0.1:8080/x", Link: true}, {Text: " b "}, {Text: "http://127.0.0.1:8080/y", Link: true}}},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := linkify(tc.body, base); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("linkify(%q) = %#v, want %#v", tc.body, got, tc.want)
			}
		})
	}
}
