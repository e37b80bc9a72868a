package portal

import "testing"

func TestPounds(t *testing.T) {
	for pence, want := range map[int64]string{0: "£0.00", 5: "£0.05", 99: "£0.99", 100: "£1.00", 123456: "£1234.56", -1: "-£0.01", -1050: "-£10.50"} {
		if got := pounds(pence); got != want {
			t.Errorf("pounds(%d) = %q, want %q", pence, got, want)
		}
	}
}
