DELETE FROM effects
