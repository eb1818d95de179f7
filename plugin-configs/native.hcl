# The native engine: agenthost's own tool-calling loop over OpenAI-compatible
# chat completions (OpenAI, Ollama, vLLM, llama.cpp, OpenRouter) and Anthropic
# Messages (see plugins/engine-native/README.md). Runs pick it with
# "engine": "native" when APPS_CODING_AGENT_NATIVE_ENABLED=1.
#
# A model's provider binding names the environment variable holding its API
# key; the engine sees only the variables listed here, so list every one your
# models name.
plugin "native" {
  kind    = "engine"
  command = "agenthost-engine-native"
  env     = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY"]
  # config {
  #   max_tool_iterations = 8      # when the host sets none
  #   max_output_tokens   = 8192   # per model turn
  #   retry_max           = 6      # retried provider requests per run
  #   retry_base_ms       = 500
  #   retry_cap_ms        = 20000
  #   request_timeout_s   = 600    # one model turn, first byte to last
  # }
}
