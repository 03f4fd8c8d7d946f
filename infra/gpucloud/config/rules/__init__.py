"""The config's cross-field rules: each section's rules that tie it to the rest of the stack, one
module per section, below the models they check (`gpucloud.config.stack` and its sections, which
import none of them). Each takes the parsed models and returns `(key, reason)` problems named by
the key to change; the loader (`gpucloud.config.loader`) runs them in order and raises them as one
ConfigError."""
