-- Where the presenter is; no row until a lead is set.
SELECT seq, scenario, renewal, fencing, pos, t, push FROM lead WHERE id = 1
