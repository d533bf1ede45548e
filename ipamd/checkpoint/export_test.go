package checkpoint

// EncodeJournal renders a whole journal, as the writer would append it
// record by record: tests and the fuzzer build journals with it.
func EncodeJournal(base string, records []Record) ([]byte, error) {
	b := journalHeader(base)
	for _, r := range records {
		var err error
		if b, err = appendRecord(b, r); err != nil {
			return nil, err
		}
	}
	return b, nil
}
