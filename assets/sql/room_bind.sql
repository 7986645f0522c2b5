-- Points the set-up transaction at the room's schema, just created; the
-- store's own connections are pointed there when they connect.
SELECT set_config('search_path', $1, true)
