package io.llmprof.agent.kineto;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Records what a reader delivers and checks the sink contract (indexes 0, 1, 2, ... per rank and lane). */
public final class RecordingSink implements OrderedSink {
    public record Delivered(String rank, Lane lane, long index, TraceEvent event) {}

    public final List<Delivered> events = new ArrayList<>();
    public final List<String> ends = new ArrayList<>();
    public final List<InputProblem> problems = new ArrayList<>();
    private final Map<String, Long> nextIndex = new LinkedHashMap<>();

    @Override
    public void event(String rank, Lane lane, long index, TraceEvent event) {
        String key = rank + "/" + lane;
        assertThat(ends).as("event after endOfTrace of %s", key).doesNotContain(key);
        assertThat(index).as("index of %s", key).isEqualTo(nextIndex.getOrDefault(key, 0L));
        nextIndex.put(key, index + 1);
        events.add(new Delivered(rank, lane, index, event));
    }

    @Override
    public void endOfTrace(String rank, Lane lane) {
        ends.add(rank + "/" + lane);
    }

    @Override
    public void problem(InputProblem problem) {
        problems.add(problem);
    }

    public List<TraceEvent> lane(String rank, Lane lane) {
        return events.stream()
                .filter(d -> d.rank().equals(rank) && d.lane() == lane)
                .map(Delivered::event)
                .toList();
    }

    public List<String> names(String rank, Lane lane) {
        return lane(rank, lane).stream().map(TraceEvent::name).toList();
    }
}
