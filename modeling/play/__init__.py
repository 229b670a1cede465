"""Playing Kuhn: the match engine, agents, named styles and tournaments."""
