-- One choice per seat and question: a new choice replaces the old one.
INSERT INTO votes (seat, question, choice) VALUES ($1, $2, $3)
ON CONFLICT (seat, question) DO UPDATE SET choice = excluded.choice
