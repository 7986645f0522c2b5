-- How many seats reached each goal.
SELECT scenario, goal, count(*) FROM goals GROUP BY scenario, goal
