package agent

// EnvPrefix starts the environment variable every flag falls back to (cli.EnvName:
// --flush-interval → BALLAST_FLUSH_INTERVAL).
const EnvPrefix = "BALLAST"
