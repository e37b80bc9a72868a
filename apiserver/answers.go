package apiserver

// The public API's response types live in the facade, next to the routes that answer them: the
// store returns rows (structs without JSON tags) and a resource shapes them into its answer
// with plain struct copies, so the JSON and the OpenAPI description change only here.

// convertRows shapes each row; nil stays nil (JSON null where the answer allowed it before),
// an empty slice stays empty ([]).
func convertRows[Row, Answer any](rows []Row, shape func(Row) Answer) []Answer {
	if rows == nil {
		return nil
	}
	out := make([]Answer, len(rows))
	for i, r := range rows {
		out[i] = shape(r)
	}
	return out
}

// convertPtr shapes the row r points at; nil stays nil (JSON null).
func convertPtr[Row, Answer any](r *Row, shape func(Row) Answer) *Answer {
	if r == nil {
		return nil
	}
	a := shape(*r)
	return &a
}
