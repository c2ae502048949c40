/** Layer compare: the kernel families of two layers, only in one, or common with duration deltas. */
package io.llmprof.events.compare;
