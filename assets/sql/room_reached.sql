-- A seat reached a goal; reaching it again keeps the fewest moves.
INSERT INTO goals (seat, scenario, goal, moves) VALUES ($1, $2, $3, $4)
ON CONFLICT (seat, scenario, goal) DO UPDATE SET moves = least(goals.moves, excluded.moves)
