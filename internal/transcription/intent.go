package transcription

import (
	"bufio"
	"bytes"
	_ "embed" // the trained classifier
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"

	"github.com/kljensen/snowball/english"
)

//go:generate go run ../../hack/intentmodel -corpus intent_corpus.txt -out intent_model.json

// The summarizer's intent comes from a complement naive Bayes classifier (Rennie et al.,
// 2003) over stemmed words and word pairs, trained from intent_corpus.txt (short caller
// utterances written for it, each labelled with its intent). Complement naive Bayes scores a
// class by how unlike the other classes' utterances a message is, which suits classes with
// few examples each. Training is counting, so intent_model.json holds the counts: `go
// generate` rewrites it from the corpus and TestIntentModelCurrent fails when it is stale.
// Urgency keeps its word lists (messageUrgency): they got more labelled calls right.

//go:embed intent_model.json
var intentModelJSON []byte

// nbModel is a trained naive Bayes classifier: for each class, how many training utterances
// it has (for readers of the file; classes have equal priors) and how many of them hold each
// feature (a feature counts once per utterance).
type nbModel struct {
	Classes  []string         `json:"classes"`
	Docs     []int            `json:"docs"`
	Features map[string][]int `json:"features"`
}

// smoothing is the additive (Lidstone) smoothing of the feature counts.
const smoothing = 0.5

var intentModel = sync.OnceValue(func() nbModel {
	var m nbModel
	if err := json.Unmarshal(intentModelJSON, &m); err != nil {
		panic("transcription: intent_model.json: " + err.Error())
	}
	return m
})

// scores are the classes' log-likelihood scores of a message under equal priors (the corpus's
// class sizes say how many lines were written, not how often callers ask); higher is more
// likely. Features never seen in training are left out; ok is false when none was seen.
func (m nbModel) scores(features []string) (scores []float64, ok bool) {
	totals := make([]float64, len(m.Classes))
	for _, counts := range m.Features {
		for c, n := range counts {
			totals[c] += float64(n)
		}
	}
	vocab := float64(len(m.Features))
	scores = make([]float64, len(m.Classes))
	for _, f := range features {
		counts, seen := m.Features[f]
		if !seen {
			continue
		}
		ok = true
		for c := range scores {
			var rest, restTotal float64
			for o := range scores {
				if o != c {
					rest += float64(counts[o])
					restTotal += totals[o]
				}
			}
			scores[c] -= math.Log((rest + smoothing) / (restTotal + smoothing*vocab))
		}
	}
	return scores, ok
}

// classify is the class with the highest score, or fallback for a message with no known feature.
func (m nbModel) classify(features []string, fallback string) string {
	scores, ok := m.scores(features)
	if !ok {
		return fallback
	}
	best := 0
	for c := range scores {
		if scores[c] > scores[best] {
			best = c
		}
	}
	return m.Classes[best]
}

// messageIntent is the intent of a transcript: the intent classifier's answer.
func messageIntent(text string) string {
	return intentModel().classify(messageFeatures(text), "general_enquiry")
}

// keptStopWords are stop words that carry meaning here: negation ("not working", "no rush"),
// particles ("call off", "turned up") and question words ("how much", "where is").
var keptStopWords = map[string]bool{"no": true, "not": true, "nor": true, "off": true, "out": true, "up": true,
	"down": true, "over": true, "again": true, "after": true, "before": true, "now": true, "how": true, "what": true,
	"when": true, "where": true, "why": true, "until": true, "more": true}

// negationScope is how many words after "not" are negated ("don't want to cancel" is
// not_want, not_cancel): transcripts have no punctuation to end the scope.
const negationScope = 3

// greetings open most messages whatever they are about.
var greetings = map[string]bool{"hello": true, "hi": true, "hiya": true, "hey": true}

// numberWords are the words of a phone number read aloud (and what recognizers write for
// them); the number says nothing about what the caller wants.
var numberWords = map[string]bool{"zero": true, "oh": true, "nought": true, "one": true, "two": true, "three": true,
	"four": true, "five": true, "six": true, "seven": true, "eight": true, "nine": true, "double": true, "triple": true,
	"hundred": true}

// messageFeatures are a message's classifier features: its words lower-cased, contractions
// expanded ("won't" is "will not"), number words, greetings and stop words dropped, stemmed
// with the Snowball (Porter2) English stemmer, the negationScope words after a "not" marked as
// negated; and each pair of neighbouring kept words.
func messageFeatures(text string) []string {
	text = strings.ToLower(strings.ReplaceAll(text, "’", "'"))
	var stems []string
	negated := 0
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' }) {
		w = strings.Trim(w, "'")
		for _, part := range expandContraction(w) {
			if part == "" || numberWords[part] || greetings[part] || (english.IsStopWord(part) && !keptStopWords[part]) {
				continue
			}
			if part == "not" {
				negated = negationScope
				continue
			}
			stem := english.Stem(part, true)
			if negated > 0 {
				negated--
				stem = "not_" + stem
			}
			stems = append(stems, stem)
		}
	}
	features := slices.Clone(stems)
	for i := 1; i < len(stems); i++ {
		features = append(features, stems[i-1]+"+"+stems[i])
	}
	return features
}

// expandContraction splits "won't" into "will not", "can't" into "can not", "didn't" into
// "did not" and drops the other endings ("it's", "I'll", "we've", "I'd", "they're", "I'm").
func expandContraction(w string) []string {
	switch w {
	case "won't":
		return []string{"will", "not"}
	case "can't", "cannot":
		return []string{"can", "not"}
	case "shan't":
		return []string{"shall", "not"}
	}
	if base, ok := strings.CutSuffix(w, "n't"); ok {
		return []string{base, "not"}
	}
	if i := strings.IndexByte(w, '\''); i >= 0 {
		return []string{w[:i]}
	}
	return []string{w}
}

// TrainIntentModel counts the corpus (lines "intent | utterance"; "#" starts a comment)
// into the intent classifier, as intent_model.json stores it.
func TrainIntentModel(corpus []byte) ([]byte, error) {
	intent := counter{}
	sc := bufio.NewScanner(bytes.NewReader(corpus))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		label, utterance, ok := strings.Cut(line, "|")
		f := strings.Fields(label)
		if !ok || len(f) != 1 || strings.TrimSpace(utterance) == "" {
			return nil, fmt.Errorf("line %d: want \"intent | utterance\"", n)
		}
		intent.add(f[0], messageFeatures(utterance))
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return intent.model().encode()
}

// encode writes the model as JSON, a feature a line, so that a change to the corpus reads as
// a short diff.
func (m nbModel) encode() ([]byte, error) {
	head, err := json.Marshal(map[string]any{"classes": m.Classes, "docs": m.Docs})
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "{%s, \"features\": {\n", head[1:len(head)-1])
	names := make([]string, 0, len(m.Features))
	for f := range m.Features {
		names = append(names, f)
	}
	sort.Strings(names)
	for i, f := range names {
		counts, err := json.Marshal(m.Features[f])
		if err != nil {
			return nil, err
		}
		sep := ","
		if i == len(names)-1 {
			sep = ""
		}
		fmt.Fprintf(&out, " %q: %s%s\n", f, counts, sep)
	}
	out.WriteString("}}\n")
	return out.Bytes(), nil
}

// counter gathers one classifier's counts.
type counter map[string]*struct {
	docs     int
	features map[string]int
}

func (c counter) add(class string, features []string) {
	k := c[class]
	if k == nil {
		k = &struct {
			docs     int
			features map[string]int
		}{features: map[string]int{}}
		c[class] = k
	}
	k.docs++
	seen := map[string]bool{}
	for _, f := range features {
		if !seen[f] {
			seen[f] = true
			k.features[f]++
		}
	}
}

// model is the counts in a fixed order (classes sorted), so the file changes only with the corpus.
func (c counter) model() nbModel {
	m := nbModel{Features: map[string][]int{}}
	for class := range c {
		m.Classes = append(m.Classes, class)
	}
	sort.Strings(m.Classes)
	for i, class := range m.Classes {
		m.Docs = append(m.Docs, c[class].docs)
		for f, n := range c[class].features {
			if m.Features[f] == nil {
				m.Features[f] = make([]int, len(m.Classes))
			}
			m.Features[f][i] = n
		}
	}
	return m
}
