-- The votes tallied per question and choice.
SELECT question, choice, count(*) FROM votes GROUP BY question, choice
