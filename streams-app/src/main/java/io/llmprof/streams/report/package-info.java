/** `analyze layers` output: the JSON document (PassView per pass, as the REST API) and the text tables. */
package io.llmprof.streams.report;
