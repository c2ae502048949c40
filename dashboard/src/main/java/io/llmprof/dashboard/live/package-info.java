/** Live updates for the web page: the hub the feed notifies and the Server-Sent Events it fans out. */
package io.llmprof.dashboard.live;
