package transcription

import "strings"

// Word is one recognised word and when it was said, in seconds from the start.
type Word struct {
	Start, End float64
	Text       string
}

// SegmentRules say where a transcript's words are split into segments.
type SegmentRules struct {
	// Pause always ends a segment: a gap at least this long between two words.
	Pause float64
	// ShortPause ends a segment that has lasted at least Target seconds.
	ShortPause float64
	Target     float64
	// Max is the longest a segment may last; a longer stretch without a pause is split
	// before the word that would take it past Max.
	Max float64
}

// DefaultSegmentRules make segments of a few seconds, split where people pause: a caller's
// sentence or two, so a transcript reads as turns rather than one block. Between sentences
// speakers pause for half a second or more; inside one, at commas, for a quarter.
var DefaultSegmentRules = SegmentRules{Pause: 0.6, ShortPause: 0.25, Target: 4, Max: 10}

// SplitSegments groups words, in time order, into segments: a segment ends after a word that
// ends a sentence (".", "!" or "?", for engines that punctuate), at a pause of r.Pause, at a
// pause of r.ShortPause once it has lasted r.Target, and before it would last longer than
// r.Max. Each segment starts at its first word's start and ends at its last word's end.
func SplitSegments(words []Word, r SegmentRules, speaker string) []Segment {
	out := []Segment{}
	var cur []Word
	flush := func() {
		if len(cur) == 0 {
			return
		}
		texts := make([]string, len(cur))
		for i, w := range cur {
			texts[i] = w.Text
		}
		out = append(out, Segment{Start: cur[0].Start, End: cur[len(cur)-1].End, Speaker: speaker, Text: strings.Join(texts, " ")})
		cur = cur[:0]
	}
	for _, w := range words {
		w.Text = strings.TrimSpace(w.Text)
		if w.Text == "" {
			continue
		}
		if len(cur) > 0 {
			last := cur[len(cur)-1]
			gap, lasted := w.Start-last.End, last.End-cur[0].Start
			switch {
			case strings.ContainsAny(last.Text[len(last.Text)-1:], ".!?"),
				gap >= r.Pause,
				gap >= r.ShortPause && lasted >= r.Target,
				w.End-cur[0].Start > r.Max:
				flush()
			}
		}
		cur = append(cur, w)
	}
	flush()
	return out
}
