package transcription

import (
	"regexp"
	"strings"

	"github.com/switchboard-dev/switchboard/internal/phone"
)

// Phone numbers in transcripts. Speech-to-text engines write a number read aloud as words
// ("oh seven seven double oh, nine double oh, four five six"), as digits ("07700 900456") or
// as a mix of both, and callers put words between the groups ("that's", "and"). libphonenumber
// (internal/phone) validates a number but reads digits only, and the words-to-number
// libraries read quantities ("seventy seven"), not digits said one by one with "double" and
// "oh"; so the words become digits here and phone.ToE164 judges the result.

// spokenDigits are the words for a single digit.
var spokenDigits = map[string]byte{"zero": '0', "oh": '0', "o": '0', "nought": '0', "naught": '0', "one": '1', "two": '2',
	"three": '3', "four": '4', "five": '5', "six": '6', "seven": '7', "eight": '8', "nine": '9'}

// repeaters say the next digit several times: "double oh" is "00".
var repeaters = map[string]int{"double": 2, "triple": 3}

// numberFillers may stand between the groups of one number ("oh seven seven double oh,
// that's nine double oh ..."); at most maxFillers of them in a row.
var numberFillers = map[string]bool{"that's": true, "thats": true, "that": true, "is": true, "it's": true, "its": true,
	"on": true, "and": true, "then": true, "so": true, "um": true, "uh": true, "er": true, "erm": true}

const maxFillers = 2

// numberToken is a word, a run of written digits (with the "+" before it, if any), or a
// sentence end; commas, hyphens, brackets and spaces only separate tokens.
var numberToken = regexp.MustCompile(`\+?[0-9]+|[\p{L}']+|[.!?;:]`)

// digitRuns returns the digit sequences spoken or written in text: runs of digit words,
// "double"/"triple" with a digit, "hundred" after a digit ("oh eight hundred" is "0800"),
// written digits and "plus", joined across separators and up to maxFillers filler words,
// and broken by any other word or a sentence end. A run keeps a leading "+".
func digitRuns(text string) []string {
	tokens := numberToken.FindAllString(strings.ToLower(text), -1)
	var runs []string
	var run strings.Builder
	fillers := 0
	end := func() {
		if run.Len() > 0 {
			runs = append(runs, run.String())
		}
		run.Reset()
		fillers = 0
	}
	for i := 0; i < len(tokens); i++ {
		tok := strings.Trim(tokens[i], "'")
		digits, used := digitsAt(tokens, i, run.Len() > 0)
		switch {
		case digits != "":
			if strings.HasPrefix(digits, "+") && run.Len() > 0 {
				end() // a "+" starts another number
			}
			run.WriteString(digits)
			fillers = 0
			i += used - 1
		case run.Len() > 0 && numberFillers[tok] && fillers < maxFillers:
			fillers++
		default:
			end()
		}
	}
	end()
	return runs
}

// digitsAt reads the digits that tokens[i] (and maybe the tokens after it) say, and how many
// tokens that took; "" when tokens[i] says none. inRun reports whether digits came just before
// (only then does "hundred" mean "00").
func digitsAt(tokens []string, i int, inRun bool) (string, int) {
	tok := tokens[i]
	if tok[0] == '+' || tok[0] >= '0' && tok[0] <= '9' {
		return tok, 1
	}
	if d, ok := spokenDigits[tok]; ok {
		if i+1 < len(tokens) && tokens[i+1] == "hundred" {
			return string(d) + "00", 2
		}
		return string(d), 1
	}
	if tok == "hundred" && inRun {
		return "00", 1
	}
	if n, ok := repeaters[tok]; ok && i+1 < len(tokens) {
		next := tokens[i+1]
		if d, ok := spokenDigits[next]; ok {
			return strings.Repeat(string(d), n), 2
		}
		if len(next) == 1 && next[0] >= '0' && next[0] <= '9' {
			return strings.Repeat(next, n), 2
		}
	}
	if tok == "plus" && i+1 < len(tokens) {
		if d, used := digitsAt(tokens, i+1, false); d != "" && d[0] != '+' {
			return "+" + d, used + 1
		}
	}
	return "", 0
}

// FindCallbackNumber returns the first phone number in text in E.164 ("" when none). Digits
// may be written ("07700 900456", "+44 20 7946 0000"), spoken ("oh seven seven double oh,
// nine double oh, four five six") or both; national numbers are read as UK numbers.
func FindCallbackNumber(text string) string {
	for _, run := range digitRuns(text) {
		if n := numberIn(run); n != "" {
			return n
		}
	}
	return ""
}

// numberIn returns the first phone number in a run of digits ("" when none). A run may hold
// more than the number ("one two three, oh seven seven ..."), so a number may start at any
// "+" or trunk "0" (not "00", which would read the digits after it as a country code): an
// international number is the longest prefix from there that is a possible number, a
// national one is the 11 digits from there, else 10 (UK national numbers have 10 or 11 digits
// with the 0). As everywhere in the service (phone.ToE164), lengths are checked, ranges not.
func numberIn(run string) string {
	if strings.HasPrefix(run, "+") {
		for end := len(run); end >= len("+1234567"); end-- {
			if e164, ok := phone.ToE164(run[:end]); ok {
				return e164
			}
		}
		return ""
	}
	for start := 0; start < len(run); start++ {
		if run[start] != '0' || (start+1 < len(run) && run[start+1] == '0') || (start > 0 && run[start-1] == '0') {
			continue
		}
		for _, n := range []int{11, 10} {
			if start+n <= len(run) {
				if e164, ok := phone.ToE164(run[start : start+n]); ok {
					return e164
				}
			}
		}
	}
	return ""
}
