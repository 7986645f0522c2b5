SELECT fence, value FROM resource_state WHERE id = 1 FOR UPDATE
