/** HTTP ingest of service events from live emitters (JSON-lines v1 bodies). */
package io.llmprof.agent.ingest;
