/** Reader of Nsight Systems SQLite exports ({@code nsys export --type sqlite}). */
package io.llmprof.agent.nsys;
