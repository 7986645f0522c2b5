-- Every seat in join order, with the name of the process it is on.
SELECT s.id, s.name, v.name, s.scenario, s.renewal, s.fencing, s.pos, s.t,
       s.following, s.joined, s.seen
FROM seats s JOIN servers v ON v.id = s.server_id
ORDER BY s.ord
