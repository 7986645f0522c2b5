-- A step back: the effects log keeps the writes up to the step, the first
-- $1 (seq counts from 1 after every reset), and loses the later ones.
DELETE FROM effects WHERE seq > $1
