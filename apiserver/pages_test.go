package apiserver_test

// page is a decoded page envelope (the spec's pagination fields) with rows of type Row.
type page[Row any] struct {
	Data        []Row   `json:"data"`
	CurrentPage int     `json:"current_page"`
	LastPage    int     `json:"last_page"`
	PerPage     int     `json:"per_page"`
	Total       int     `json:"total"`
	NextPageURL *string `json:"next_page_url"`
	PrevPageURL *string `json:"prev_page_url"`
	// UnreadCount is on the inbox lists only.
	UnreadCount *int `json:"unread_count"`
	// Conversation is only on a conversation-messages page.
	Conversation map[string]any `json:"conversation"`
}

// rawPage is a page whose rows stay decoded JSON objects.
type rawPage struct {
	page[map[string]any]
}

// ids lists the values of field of each row ("" where a row has no such string).
func (p rawPage) ids(field string) []string {
	out := make([]string, len(p.Data))
	for i, row := range p.Data {
		out[i], _ = row[field].(string)
	}
	return out
}
