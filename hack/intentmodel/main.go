// Command intentmodel trains the built-in summarizer's intent classifier from its
// corpus and writes the model file the summarizer embeds (go generate
// ./internal/transcription/ runs it).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/switchboard-dev/switchboard/internal/transcription"
)

func main() {
	corpus := flag.String("corpus", "internal/transcription/intent_corpus.txt", "the training corpus")
	out := flag.String("out", "internal/transcription/intent_model.json", "the model file to write")
	flag.Parse()
	if err := run(*corpus, *out); err != nil {
		fmt.Fprintln(os.Stderr, "intentmodel:", err)
		os.Exit(1)
	}
}

func run(corpusPath, outPath string) error {
	corpus, err := os.ReadFile(corpusPath)
	if err != nil {
		return err
	}
	model, err := transcription.TrainIntentModel(corpus)
	if err != nil {
		return fmt.Errorf("%s: %w", corpusPath, err)
	}
	return os.WriteFile(outPath, model, 0o644)
}
