// Package translate converts request, response, error and stream bodies
// between the OpenAI Chat Completions wire format, which is the gateway's
// canonical format, and the Anthropic Messages API and the Gemini API
// (generateContent and streamGenerateContent?alt=sse of the Generative
// Language API, v1beta).
//
// The package is pure: functions of bytes to bytes, no I/O besides the
// io.Reader a stream is read from, no clock, no package-level state. Every
// function is safe for concurrent use; a StreamConverter and the reader of
// NewReader are not, being state machines for one stream.
//
// # Directions
//
// Requests go from the canonical format to a backend (OpenAIRequestToAnthropic,
// OpenAIRequestToGemini), and from an Anthropic client to the canonical format
// (AnthropicRequestToOpenAI). A canonical body bound for an OpenAI-format
// backend goes through ForOpenAI last. Responses, errors and streams go back
// the other way; an Anthropic client served by a Gemini backend gets Gemini →
// OpenAI → Anthropic through Chain. EstimateAnthropicTokens and
// EstimateOpenAITokens estimate input tokens where no backend counts them
// (count_tokens, message_start).
//
// Gemini API clients (Google's SDKs, generateContent) go Gemini -> chat
// (GeminiRequestToOpenAI) and back (OpenAIResponseToGemini,
// NewOpenAIToGeminiStream, ErrorToGemini); their embedContent calls go to
// embeddings (GeminiEmbedToOpenAI) and back (OpenAIEmbeddingToGemini).
//
// Responses API clients go Responses -> chat (ResponsesRequestToOpenAI)
// and back (OpenAIResponseToResponses, NewOpenAIToResponsesStream); their
// errors use the OpenAI error shape, so ErrorToOpenAI serves them. The
// Responses mapping is documented at the top of responses.go.
//
// # What cannot be honoured
//
// A request converter never drops a feature the caller asked for: it returns
// an *UnsupportedError, and the gateway tries another backend. Unknown
// request members are refused the same way, so a parameter OpenAI adds later
// is refused rather than ignored. Members that change nothing a backend could
// do differently are ignored: model (Anthropic takes the one given, Gemini has
// it in the URL), stream and stream_options (the converter's arguments decide
// usage reporting), user (Anthropic metadata.user_id), metadata, store,
// service_tier, prompt_cache_key and safety_identifier. Null counts as absent.
//
// Refused for both backends: logprobs, top_logprobs, a non-empty logit_bias,
// audio output (audio, modalities other than text), input_audio parts, files
// by file_id, legacy functions/function_call, tool types other than
// function, tool_choice of type allowed_tools. Refused for Anthropic: n > 1,
// a non-zero presence_penalty or frequency_penalty, seed, temperature above 1
// (Anthropic's range is 0 to 1), response_format json_object or json_schema,
// image types other than JPEG, PNG, GIF and WebP, files other than PDF.
// Refused for Gemini: images by URL (only data: URLs), more than 5 stop
// sequences, a seed beyond 32 bits, JSON Schema it cannot express (see
// geminiSchema), and parallel_tool_calls: false when tools may be called,
// because Gemini may answer with several calls at once and has no switch to
// stop it. Gemini maps n (candidateCount), seed, presence_penalty and
// frequency_penalty; some Gemini models answer 400 to the penalties.
// Refused for Anthropic with reasoning_effort (Anthropic forbids them with
// thinking): a temperature other than 1, top_k, a top_p below 0.95, and
// forced tool use (tool_choice required or a function); and a
// reasoning_effort it does not know. Gemini refuses reasoning_effort as an
// unknown parameter. Refused from Anthropic clients: server tools,
// output_config.format, an unknown output_config.effort, thinking types
// other than enabled, adaptive and disabled, context_management edits other
// than clearing ones (compact_*), documents other than a base64 PDF, and any
// other member not listed in anKnown.
//
// # Gemini clients
//
// A generateContent request is read in Google's JSON names (lowerCamelCase,
// as the SDKs write them). Mapped: contents (roles user and model), text,
// inlineData images (JPEG, PNG, GIF, WebP; data URLs) and PDFs (file parts),
// functionCall (tool_calls; the call's id when it has one, else a digest)
// and functionResponse (a tool message paired with its call by id, else by
// name in order; a response whose only member is a string output or result
// is that text, else its JSON), systemInstruction (a system message),
// tools[].functionDeclarations (parameters converted from Gemini's Schema
// to JSON Schema: types to lower case, nullable as a type list with
// "null", int64 counts from strings to numbers, propertyOrdering left out;
// parametersJsonSchema as it is), toolConfig (AUTO auto, NONE none, ANY
// required, ANY with one allowed name that function), and generationConfig
// (temperature, topP, topK as top_k, maxOutputTokens as
// max_completion_tokens, stopSequences, candidateCount as n, seed,
// presencePenalty, frequencyPenalty, responseMimeType application/json as
// json_object, or json_schema named "response" with responseSchema or
// responseJsonSchema, responseModalities of TEXT only, thinkingConfig as
// reasoning_effort: thinkingLevel by name, thinkingBudget 0 "none", -1
// "medium", else effortOfBudget's bands). Thought parts in history are
// dropped, like Anthropic thinking blocks; thoughtSignature is ignored.
// Refused: every other member (safetySettings, cachedContent, Google's own
// tools, fileData, executableCode, other media, speechConfig,
// responseLogprobs, …), function calling modes other than those above, and
// Schema members other than those geminiSchema keeps.
//
// Back to a Gemini client: a candidate per choice, text parts, a
// functionCall part per tool call (its id kept, so the client's
// functionResponse can name it), reasoning as a first thought part only
// when the request set thinkingConfig.includeThoughts; finishReason STOP
// for stop and tool_calls, MAX_TOKENS for length, SAFETY for
// content_filter or a refusal, else OTHER; usageMetadata with reasoning
// tokens as thoughtsTokenCount (out of candidatesTokenCount) and cached
// tokens as cachedContentTokenCount; modelVersion the completion's model,
// responseId its id without "chatcmpl-". A stream sends each text delta as
// it comes; tool calls, whose arguments chat streams in pieces, go whole in
// the last chunk with the finishReason and the usage, held until the usage
// chunk or the end. Errors are {"error":{"code","message","status"}} with
// the google.rpc status of the HTTP status, the source's code kept as an
// ErrorInfo reason (domain "switchover").
//
// # Extensions of the canonical format
//
// The canonical body may carry three members beyond standard Chat
// Completions. top_k (from an Anthropic client's top_k) goes to Anthropic as
// top_k and to Gemini as generationConfig.topK; a top_k below 1 means none.
// reasoning_effort is OpenAI's own for reasoning models. reasoning_content
// (DeepSeek's and vLLM's member) carries the model's reasoning in a response
// message or stream delta; a string "reasoning" (OpenRouter, newer vLLM) is
// read the same. ForOpenAI(canon, OpenAIOptions) refuses top_k and
// reasoning_effort for a backend that does not declare them (a
// reasoning_effort of "none" is removed instead) and removes
// reasoning_content from assistant history.
//
// # Thinking and reasoning
//
// From Anthropic clients: thinking "enabled" maps budget_tokens to
// reasoning_effort: below 4096 "low", below 16384 "medium", else "high";
// "adaptive" is "high" (Anthropic's default effort); output_config.effort,
// when given, wins (xhigh and max become "high"); "disabled" or no thinking
// is no reasoning_effort, whatever the effort. thinking.display is not
// honoured. Thinking and redacted_thinking blocks in assistant history are
// dropped: only Anthropic can read them (redacted ones are encrypted, and
// signatures are Anthropic's), and a chat backend takes no reasoning back.
//
// To Anthropic: reasoning_effort low, medium, high and xhigh become thinking
// {type: enabled, budget_tokens: 2048, 8192, 16384, 32768}, each inside its
// band above so a round trip keeps the effort; "none" and "minimal" are no
// thinking. Anthropic wants budget_tokens below max_tokens, which counts
// thinking and answer together: a max_tokens not above the budget is raised
// by the budget (the answer keeps the room it was given; the total may pass
// the client's limit or the model's output maximum). reasoning_content in
// assistant history is not sent (Anthropic takes back only thinking blocks
// with its own signature).
//
// Responses: Anthropic thinking text becomes reasoning_content of the chat
// message, or of each delta (thinking_delta); signatures and
// redacted_thinking are left out. Chat reasoning becomes a thinking block
// before the text, whose signature is "" (the Messages API always has the
// member, and only Anthropic can make a real one); streams send no
// signature_delta. Such a block sent back to Anthropic itself would be
// refused there for its signature.
//
// # Anthropic client members dropped knowingly
//
// cache_control, at the top level and on system, message, tool and
// tool_result blocks: it asks Anthropic to cache a prefix, which an
// OpenAI-format backend does on its own or not at all. context_management
// clearing edits (clear_tool_uses_*, clear_thinking_*): they only ask
// Anthropic to trim the context it builds while the client keeps the whole
// history; a chat backend gets the whole history. service_tier.
//
// # Mapping decisions
//
// Messages. OpenAI system and developer messages, wherever they stand, become
// Anthropic's top-level system (one text block per part, in order) or
// Gemini's systemInstruction (one part each). Consecutive messages of the
// same role are merged, since Anthropic requires user and assistant to
// alternate and Gemini expects it; tool results are user turns for both, so
// a tool result and the user text after it make one turn. Empty texts are
// left out (Anthropic refuses empty text blocks). A message's name and an
// image's detail have no equivalent and are ignored. A last assistant
// message is sent as it is: Anthropic continues it (prefill), OpenAI and
// Gemini answer after it.
//
// Tools. parameters are passed to Anthropic as input_schema unchanged; a
// function without parameters gets {"type":"object","properties":{}}.
// Gemini's parameters are converted to its Schema subset; an object schema
// without properties is left out, Gemini refusing an empty OBJECT. strict is
// ignored: the schema still reaches the model, but neither backend is asked
// to guarantee it. tool_choice none/auto/required/function maps to Anthropic
// none/auto/any/tool and Gemini NONE/AUTO/ANY/ANY with allowedFunctionNames;
// without tools it is left out. parallel_tool_calls false becomes Anthropic's
// disable_parallel_tool_use. Tool call arguments must be a JSON object ("" is
// {}): Anthropic's input and Gemini's args are objects. Anthropic tool ids
// allow only [a-zA-Z0-9_-]: other bytes become "_", the same way for the call
// and its result. Gemini needs the function name of a tool result: it is
// found from the id of the earlier call. A tool result is sent to Gemini as
// the JSON object it is, or as {"output": text}.
//
// Gemini thought signatures. Gemini 3 refuses a history function call without
// the thoughtSignature it was returned with, which an OpenAI client cannot
// keep (and history may come from another model after a failover). A call
// with extra_content.google.thought_signature (Google's own OpenAI
// compatibility field) sends it back; otherwise the first call of each
// assistant message carries the signature Gemini documents for calls it did
// not make, "skip_thought_signature_validator". Responses do not carry
// signatures out, so as not to put Gemini-only fields before clients and
// other backends.
//
// JSON output. Gemini: json_object sets responseMimeType application/json;
// json_schema also sets responseSchema, converted as geminiSchema describes,
// with propertyOrdering in the declared order. Anthropic: refused (Anthropic's
// newer output_config.format is model-dependent and not mapped).
//
// Limits. max_completion_tokens wins over max_tokens. Anthropic requires a
// limit: AnthropicOptions.MaxTokens, or 4096. From Anthropic clients,
// max_tokens becomes max_completion_tokens (newer OpenAI models refuse
// max_tokens). top_p 1 is not sent to Anthropic, whose newer models refuse
// temperature and top_p together; other values are.
//
// Stop sequences. A string or a list; empty strings are dropped. OpenAI does
// not say which sequence matched, so "stop" becomes Anthropic end_turn with
// a null stop_sequence.
//
// Finish reasons. Anthropic end_turn, stop_sequence and pause_turn are
// "stop", max_tokens and model_context_window_exceeded "length", tool_use
// "tool_calls", refusal "content_filter". Gemini STOP is "stop", or
// "tool_calls" when the candidate called functions; MAX_TOKENS is "length";
// SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII and the image
// variants are "content_filter"; anything else (OTHER, LANGUAGE,
// MALFORMED_FUNCTION_CALL, …) is "stop". A prompt Gemini blocked is one empty
// choice ending in "content_filter". Back to Anthropic: length is max_tokens,
// tool_calls (or stop with tool calls) tool_use, content_filter or a refusal
// refusal, else end_turn.
//
// Translated Messages carry every member the Messages API documents:
// stop_sequence, stop_details, container and diagnostics are null (no
// matched sequence is known, no refusal category, no code-execution
// container, no cache diagnostics), in responses, message_start and
// message_delta. Text blocks have no citations member (Anthropic leaves it
// out of a block that cites nothing); tool_use blocks have caller
// {"type": "direct"}: the model made every call a translated answer holds.
//
// Usage. OpenAI prompt_tokens counts cached tokens where Anthropic
// input_tokens does not: prompt_tokens = input_tokens +
// cache_creation_input_tokens + cache_read_input_tokens, and cache reads are
// prompt_tokens_details.cached_tokens; back to Anthropic, cached tokens are
// cache_read_input_tokens and the rest input_tokens, and
// cache_creation_input_tokens is 0 (OpenAI-format backends have no separate
// cache write). Translated Anthropic usage also carries cache_creation
// (zeros), output_tokens_details.thinking_tokens (from
// completion_tokens_details.reasoning_tokens, and back), server_tool_use
// (zeros), service_tier ("priority" when the chat response says priority,
// else "standard"), speed "standard" and inference_geo null. Gemini
// promptTokenCount is prompt_tokens, candidatesTokenCount plus
// thoughtsTokenCount is completion_tokens (thoughts as reasoning_tokens), and
// totalTokenCount total_tokens; cachedContentTokenCount is cached_tokens.
//
// Ids and times. Output is deterministic for golden tests: "created" is
// always 0. Completion ids are "chatcmpl-" + the Anthropic message id, or +
// Gemini's responseId ("chatcmpl-gemini" without one); Anthropic message ids
// are the completion id with "chatcmpl-" replaced by "msg_" (or just removed
// before "msg_"). Gemini calls get "call_" + a digest of the response id,
// the candidate, the call's position and the call itself. Anthropic tool ids
// pass through as OpenAI tool call ids, and back.
//
// Content left out of responses. Anthropic signatures and redacted_thinking
// blocks, Gemini thought parts, Gemini inline data in answers and any block
// type not listed here. A tool_result with is_error becomes a tool message
// whose text starts with "Error: ". A chat tool message holds text only: the
// images and documents of a tool_result go, in order, into a user message
// after the run of tool messages (OpenAI wants every tool message right
// after the assistant's tool calls), ahead of the turn's own user blocks.
//
// # Errors
//
// ErrorToOpenAI and ErrorToAnthropic never fail: a body that is not the
// provider's error shape becomes an error of a type chosen by HTTP status,
// keeping the body's text as message. ErrorCode, RetryDelay and ModelOf read
// possibly truncated prefixes, token by token, so they can classify the
// start of a body the gateway has not read to its end.
//
// # Streams
//
// An OpenAI stream reports usage only at its end: NewOpenAIToAnthropicStreamWith
// takes the engine's estimate of the input tokens for message_start, and the
// final message_delta carries the real counts when the source sends them.
//
// NewReader parses server-sent events and converts each as soon as its blank
// line arrives. A source error is returned after what was already
// converted, without End; so is an error event inside the source stream,
// converted to the output format and returned as a *StreamError. A source
// that ends cleanly before its response is complete (no Anthropic
// message_stop or stop_reason, no OpenAI finish_reason or [DONE], a Gemini
// candidate without finishReason) ends with ErrTruncated, without End, so
// that a cut-off answer is never closed as if whole.
package translate
