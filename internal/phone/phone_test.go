package phone

import (
	"strconv"
	"testing"
)

func TestToE164(t *testing.T) {
	tests := []struct {
		raw  string
		want string // "" = unreadable
	}{
		{"020 7946 0000", "+442079460000"},
		{"07700 900123", "+447700900123"},
		{"07700900123", "+447700900123"},
		{"+44 (0)20 7946 0000", "+442079460000"},
		{"+44 7700 900123 ", "+447700900123"},
		{"0044 20 7946 0000", "+442079460000"},
		{"(0117) 496 0000", "+441174960000"},
		{"0800 123 4567", "+448001234567"},
		{"020 7946 0000 ext. 12", "+442079460000"},
		{"tel:+442079460000", "+442079460000"},
		{"+1 (415) 555-0100", "+14155550100"},
		{"+33 1 23 45 67 89", "+33123456789"},
		{"", ""},
		{"   ", ""},
		{"not a number", ""},
		{"ext 5", ""},
		{"12345", ""},
		{"999", ""},
		{"+4420794600001234", ""},
		{"1-800-FLOWERS", ""},
		{"+44 20 7946 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000", ""},
	}
	for _, tt := range tests {
		got, ok := ToE164(tt.raw)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("ToE164(%q) = %q, %v; want %q", tt.raw, got, ok, tt.want)
		}
	}
}

func TestToE164InOtherRegion(t *testing.T) {
	tests := []struct {
		raw, region, want string
	}{
		{"(415) 555-0100", "US", "+14155550100"},
		{"01 23 45 67 89", "FR", "+33123456789"},
		{"+44 20 7946 0000", "US", "+442079460000"},
		{"020 7946 0000", "", ""}, // national form with no region to read it in
	}
	for _, tt := range tests {
		got, ok := ToE164In(tt.raw, tt.region)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("ToE164In(%q, %q) = %q, %v; want %q", tt.raw, tt.region, got, ok, tt.want)
		}
	}
}

// Answers are remembered per input and region: a number read once in one region is read
// afresh in another, a remembered answer equals a fresh parse, and the memory is bounded.
func TestToE164RemembersPerRegion(t *testing.T) {
	for range 2 { // the second pass answers from memory
		if got, ok := ToE164In("020 7946 0000", "GB"); got != "+442079460000" || !ok {
			t.Errorf("GB: %q, %v", got, ok)
		}
		if got, ok := ToE164In("020 7946 0000", "US"); ok {
			t.Errorf("US: %q, %v; want unreadable", got, ok)
		}
		if got, ok := ToE164In("not a number", "GB"); ok {
			t.Errorf("not a number: %q, %v", got, ok)
		}
	}
	for i := range parsedSize + 100 {
		ToE164In("07700 "+strconv.Itoa(900000+i), "GB")
	}
	if n := parsed.Len(); n > parsedSize {
		t.Errorf("%d answers remembered, bound %d", n, parsedSize)
	}
	if got, ok := ToE164In("07700 900042", "GB"); got != "+447700900042" || !ok {
		t.Errorf("after eviction: %q, %v", got, ok)
	}
}
