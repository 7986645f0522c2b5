-- The presenter moves: the one lead row, with seq one more than before.
-- The row stays locked until the transaction ends, so leads set at once
-- get their seqs in commit order, the order LISTEN delivers them in.
INSERT INTO lead (id, seq, scenario, renewal, fencing, pos, t, push)
VALUES (1, 1, $1, $2, $3, $4, $5, $6)
ON CONFLICT (id) DO UPDATE
SET seq = lead.seq + 1, scenario = excluded.scenario, renewal = excluded.renewal,
    fencing = excluded.fencing, pos = excluded.pos, t = excluded.t, push = excluded.push
RETURNING seq
