package transcription

import (
	"regexp"
	"strings"

	"github.com/nyaruka/phonenumbers"

	"github.com/switchboard-dev/switchboard/internal/phone"
)

// Phone numbers in transcripts. Speech-to-text engines write a number read aloud as words
// ("oh one six one, four nine six, oh double five five"), as digits ("0161 496 0555"), as a mix
// of both, or with a digit misheard as a word that sounds like it ("to", "for"), and callers
// put words between the groups ("that's", "and"). libphonenumber validates a number but reads
// digits only, and the words-to-number libraries read quantities ("seventy seven"), not
// digits said one by one with "double" and "oh"; so the words become digits here and
// libphonenumber judges the result.

// spokenDigits are the words for a single digit.
var spokenDigits = map[string]byte{"zero": '0', "oh": '0', "o": '0', "nought": '0', "naught": '0', "one": '1', "two": '2',
	"three": '3', "four": '4', "five": '5', "six": '6', "seven": '7', "eight": '8', "nine": '9'}

// heardBetweenDigits are words a recognizer writes for a digit it misheard ("two" as "to",
// "four" as "for", an "oh" inside a number as "so" or "or": Vosk's small model on telephone
// audio, `make bench-stt`); they are read as digits only inside a number, after a digit and
// before another, so "I need to go for lunch at two" stays a sentence.
var heardBetweenDigits = map[string]byte{"to": '2', "too": '2', "for": '4', "fore": '4', "so": '0', "or": '0'}

// heardAsLeadingOh are words a recognizer writes for the "oh" a UK number starts with; they
// are read as 0 only where a number starts, before a digit other than 0.
var heardAsLeadingOh = map[string]bool{"a": true, "know": true, "of": true, "owe": true}

// repeaters say the next digit several times: "double oh" is "00".
var repeaters = map[string]int{"double": 2, "triple": 3}

// numberFillers may stand between the groups of one number ("oh seven seven double oh,
// that's nine double oh ..."); at most maxFillers of them in a row.
var numberFillers = map[string]bool{"that's": true, "thats": true, "that": true, "is": true, "it's": true, "its": true,
	"on": true, "and": true, "then": true, "um": true, "uh": true, "er": true, "erm": true}

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
			if digits, used := digitsAt(tokens, i, false); digits != "" { // a word heard for a leading "oh"
				run.WriteString(digits)
				i += used - 1
			}
		}
	}
	end()
	return runs
}

// digitsAt reads the digits that tokens[i] (and maybe the tokens after it) say, and how many
// tokens that took; "" when tokens[i] says none. inRun reports whether digits came just before
// (only then does "hundred" mean "00", or a misheard digit count).
func digitsAt(tokens []string, i int, inRun bool) (string, int) {
	tok := tokens[i]
	if tok[0] == '+' || isDigit(tok[0]) {
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
	if d, ok := heardBetweenDigits[tok]; ok && inRun && i+1 < len(tokens) {
		if next, _ := digitsAt(tokens, i+1, true); next != "" && next[0] != '+' {
			return string(d), 1
		}
	}
	if heardAsLeadingOh[tok] && !inRun && i+1 < len(tokens) {
		if next, _ := digitsAt(tokens, i+1, true); next != "" && isDigit(next[0]) && next[0] != '0' {
			return "0", 1
		}
	}
	if n, ok := repeaters[tok]; ok && i+1 < len(tokens) {
		next := tokens[i+1]
		if d, ok := spokenDigits[next]; ok {
			return strings.Repeat(string(d), n), 2
		}
		if len(next) == 1 && isDigit(next[0]) {
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

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// FindCallbackNumber returns the first valid phone number in text in E.164 ("" when none).
// Digits may be written ("020 7946 0018", "+44 20 7946 0000"), spoken ("oh one six one, four
// nine six, oh double five five") or both; national numbers are read as UK numbers. A run of
// digits that is no valid number (a digit missed or misheard, a range never allocated) gives
// none rather than a guess.
func FindCallbackNumber(text string) string {
	for _, run := range digitRuns(text) {
		if n := numberIn(run); n != "" {
			return n
		}
	}
	return ""
}

// ReportedCallbackNumber reads the callback number a summary model reported (as the caller
// said it: digits, words or both) as FindCallbackNumber reads a transcript: nil unless it is a
// valid number of its country. A model may fill a digit in or drop one, and a number of a
// possible length is not enough for that.
func ReportedCallbackNumber(reported *string) *string {
	if reported == nil {
		return nil
	}
	if n := FindCallbackNumber(*reported); n != "" {
		return &n
	}
	return nil
}

// numberIn returns the first valid phone number in a run of digits ("" when none). A run may
// hold more than the number ("one two three, oh seven seven ..."), so a number may start at
// any "+" or trunk "0" (not "00", which would read the digits after it as a country code): an
// international number is the longest valid prefix from there, a national one the 11 digits
// from there, else 10 (UK national numbers have 10 or 11 digits with the 0). Unlike a number
// typed into a form (phone.ToE164 checks its length only), a number heard in speech must be
// in an allocated range: a recognizer that dropped or misheard one digit still leaves a
// number of a possible length.
func numberIn(run string) string {
	if strings.HasPrefix(run, "+") {
		for end := len(run); end >= len("+1234567"); end-- {
			if e164, ok := validNumber(run[:end]); ok {
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
				if e164, ok := validNumber(run[start : start+n]); ok {
					return e164
				}
			}
		}
	}
	return ""
}

// validNumber reads digits (with a leading "+", or national as a UK number) as a number in an
// allocated range of its country.
func validNumber(digits string) (string, bool) {
	n, err := phonenumbers.Parse(digits, phone.DefaultRegion)
	if err != nil || !phonenumbers.IsValidNumber(n) {
		return "", false
	}
	return phonenumbers.Format(n, phonenumbers.E164), true
}
