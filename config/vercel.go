package config

// VercelConf configures the vercel backend (the `vercel:` section).
type VercelConf struct{}
