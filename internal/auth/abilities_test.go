package auth

import "testing"

func TestAbilitiesHas(t *testing.T) {
	tests := []struct {
		held []string
		want Ability
		ok   bool
	}{
		{nil, Read, true},
		{nil, ContactsRead, false},
		{[]string{"contacts:write"}, ContactsRead, true},
		{[]string{"contacts:read"}, ContactsWrite, false},
		{[]string{"auto-transcribe"}, Transcribe, true},
		{[]string{"transcribe"}, AutoTranscribe, false},
		{[]string{"inbox:write"}, WebhooksManage, false},
		{[]string{"webhooks:manage"}, WebhooksManage, true},
	}
	for _, tt := range tests {
		as, err := ParseAbilities(tt.held)
		if err != nil {
			t.Fatal(err)
		}
		if got := as.Has(tt.want); got != tt.ok {
			t.Errorf("%v.Has(%s) = %v, want %v", tt.held, tt.want, got, tt.ok)
		}
	}
	if _, err := ParseAbilities([]string{"root"}); err == nil {
		t.Error("unknown permission accepted")
	}
}

func TestBearerToken(t *testing.T) {
	for header, want := range map[string]string{"Bearer abc": "abc", "bearer  abc ": "abc", "Basic abc": "", "Bearer ": "", "": ""} {
		got, ok := BearerToken(header)
		if got != want || ok != (want != "") {
			t.Errorf("BearerToken(%q) = %q, %v", header, got, ok)
		}
	}
}
