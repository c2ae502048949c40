package io.llmprof.dashboard.api;

/** Body of every error answer: {@code {"error": "<code>", "message": "<what to do>"}}. */
public record ErrorResponse(String error, String message) {}
