package transcription

import (
	"reflect"
	"testing"
)

func TestSplitSegments(t *testing.T) {
	// words says each word for 0.3 s, with the gap before it given: "w@gap".
	words := func(spec ...any) []Word {
		var out []Word
		at := 0.0
		for i := 0; i < len(spec); i += 2 {
			at += spec[i+1].(float64)
			out = append(out, Word{Start: at, End: at + 0.3, Text: spec[i].(string)})
			at += 0.3
		}
		return out
	}
	seg := func(start, end float64, text string) Segment {
		return Segment{Start: start, End: end, Speaker: "caller", Text: text}
	}
	r := SegmentRules{Pause: 0.6, ShortPause: 0.25, Target: 1.5, Max: 4}
	tests := []struct {
		name  string
		words []Word
		want  []Segment
	}{
		{"no words", nil, []Segment{}},
		{"one word", words("hello", 0.5), []Segment{seg(0.5, 0.8, "hello")}},
		{"no pause: one segment", words("my", 0.0, "boiler", 0.0, "is", 0.0, "broken", 0.0),
			[]Segment{seg(0, 1.2, "my boiler is broken")}},
		{"a long pause splits", words("hello", 0.0, "my", 0.7, "boiler", 0.0),
			[]Segment{seg(0, 0.3, "hello"), seg(1.0, 1.6, "my boiler")}},
		{"just under a long pause does not split a short segment", words("hello", 0.0, "my", 0.59, "boiler", 0.0),
			[]Segment{seg(0, 1.49, "hello my boiler")}},
		{"a short pause splits only after the target length",
			words("a", 0.0, "b", 0.3, "c", 0.0, "d", 0.0, "e", 0.0, "f", 0.3, "g", 0.0),
			[]Segment{seg(0, 1.8, "a b c d e"), seg(2.1, 2.7, "f g")}},
		{"a sentence end splits", words("hello.", 0.0, "it's", 0.0, "sam", 0.0),
			[]Segment{seg(0, 0.3, "hello."), seg(0.3, 0.9, "it's sam")}},
		{"a question mark splits", words("ready?", 0.0, "yes", 0.0), []Segment{seg(0, 0.3, "ready?"), seg(0.3, 0.6, "yes")}},
		{"no pause at all: split before max",
			words("a", 0.0, "b", 0.0, "c", 0.0, "d", 0.0, "e", 0.0, "f", 0.0, "g", 0.0, "h", 0.0, "i", 0.0, "j", 0.0, "k", 0.0, "l", 0.0, "m", 0.0, "n", 0.0, "o", 0.0),
			[]Segment{seg(0, 3.9, "a b c d e f g h i j k l m"), seg(3.9, 4.5, "n o")}},
		{"blank words are dropped", words("hello", 0.0, " ", 0.0, "there", 0.0), []Segment{seg(0, 0.9, "hello there")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SplitSegments(tt.words, r, "caller")
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
			for i := range got {
				g, w := got[i], tt.want[i]
				if g.Text != w.Text || g.Speaker != w.Speaker || !near(g.Start, w.Start) || !near(g.End, w.End) {
					t.Errorf("segment %d: got %+v, want %+v", i, g, w)
				}
			}
		})
	}
	if !reflect.DeepEqual(SplitSegments(nil, DefaultSegmentRules, "speaker"), []Segment{}) {
		t.Error("no words: want an empty, non-nil list")
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
