/** The JSON shape of passes and layers shared by `analyze layers --format json` and the REST API. */
package io.llmprof.events.view;
