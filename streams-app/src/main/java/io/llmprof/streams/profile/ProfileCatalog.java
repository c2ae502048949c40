package io.llmprof.streams.profile;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.events.Json;
import io.llmprof.streams.category.CategoryRule;
import io.llmprof.streams.category.DisplayNames;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * The profiles and universal category rules: the built-in {@code profiles.json} resource, optionally
 * extended by user files. A user profile with a built-in's name replaces it in place; new profiles are
 * tried before the built-ins for auto-selection; user universal and launch-context rules come before the built-in
 * ones; user communication categories are added to the built-in ones.
 */
public final class ProfileCatalog {
    public static final String RESOURCE = "/io/llmprof/streams/profiles.json";

    /** The file shape (built-in resource and user files alike). */
    public record CatalogFile(
            @JsonProperty("profiles") List<Profile> profiles,
            @JsonProperty("universal_categories") List<CategoryRule> universalCategories,
            @JsonProperty("communication_categories") List<String> communicationCategories,
            @JsonProperty("launch_context_categories") List<CategoryRule> launchContextCategories,
            @JsonProperty("allreduce_pattern") String allreducePattern,
            @JsonProperty("display_names") List<DisplayNames.Rule> displayNames) {
        public CatalogFile {
            profiles = profiles == null ? List.of() : List.copyOf(profiles);
            universalCategories = universalCategories == null ? List.of() : List.copyOf(universalCategories);
            communicationCategories =
                    communicationCategories == null ? List.of() : List.copyOf(communicationCategories);
            launchContextCategories =
                    launchContextCategories == null ? List.of() : List.copyOf(launchContextCategories);
            displayNames = displayNames == null ? List.of() : List.copyOf(displayNames);
        }
    }

    private static volatile ProfileCatalog builtIn;

    private final List<Profile> profiles;
    private final List<CategoryRule> universal;
    private final List<String> communication;
    private final List<CategoryRule> launchContext;
    private final String allreducePattern;
    private final DisplayNames displayNames;

    private ProfileCatalog(
            List<Profile> profiles,
            List<CategoryRule> universal,
            List<String> communication,
            List<CategoryRule> launchContext,
            String allreducePattern,
            DisplayNames names) {
        this.profiles = List.copyOf(profiles);
        this.universal = List.copyOf(universal);
        this.communication = List.copyOf(communication);
        this.launchContext = List.copyOf(launchContext);
        this.allreducePattern = allreducePattern;
        this.displayNames = names;
    }

    /** The built-in catalog (loaded once; immutable). */
    public static ProfileCatalog builtIn() {
        ProfileCatalog c = builtIn;
        if (c == null) {
            try (InputStream in = ProfileCatalog.class.getResourceAsStream(RESOURCE)) {
                if (in == null) {
                    throw new IllegalStateException("resource " + RESOURCE + " missing from the classpath");
                }
                CatalogFile f = Json.mapper().readValue(in, CatalogFile.class);
                c = new ProfileCatalog(
                        f.profiles(),
                        f.universalCategories(),
                        f.communicationCategories(),
                        f.launchContextCategories(),
                        f.allreducePattern(),
                        new DisplayNames(f.displayNames()));
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read built-in profiles " + RESOURCE, e);
            }
            builtIn = c;
        }
        return c;
    }

    /** Built-ins extended by a user file, or by every {@code *.json} of a directory (name order). */
    public static ProfileCatalog withUserProfiles(Path fileOrDir) {
        if (fileOrDir == null) {
            return builtIn();
        }
        List<Path> files;
        if (Files.isDirectory(fileOrDir)) {
            try (Stream<Path> s = Files.list(fileOrDir)) {
                files = s.filter(p -> p.getFileName().toString().endsWith(".json"))
                        .sorted()
                        .toList();
            } catch (IOException e) {
                throw new UncheckedIOException("cannot list profiles directory " + fileOrDir, e);
            }
        } else {
            files = List.of(fileOrDir);
        }
        ProfileCatalog c = builtIn();
        for (Path f : files) {
            try {
                c = c.extendedBy(Json.mapper().readValue(f.toFile(), CatalogFile.class));
            } catch (IOException e) {
                throw new IllegalArgumentException("cannot read profiles file " + f + ": " + e.getMessage(), e);
            }
        }
        return c;
    }

    /** This catalog extended by a user file's content. */
    public ProfileCatalog extendedBy(CatalogFile user) {
        Map<String, Profile> byName = new LinkedHashMap<>();
        profiles.forEach(p -> byName.put(p.name(), p));
        List<Profile> added = new ArrayList<>();
        for (Profile p : user.profiles()) {
            if (byName.containsKey(p.name())) {
                byName.put(p.name(), p); // replaces in place, keeps selection order
            } else {
                added.add(p);
            }
        }
        List<Profile> merged = new ArrayList<>(added);
        merged.addAll(byName.values());
        List<CategoryRule> rules = new ArrayList<>(user.universalCategories());
        rules.addAll(universal);
        List<String> comm = new ArrayList<>(communication);
        user.communicationCategories().stream().filter(c -> !comm.contains(c)).forEach(comm::add);
        List<CategoryRule> context = new ArrayList<>(user.launchContextCategories());
        context.addAll(launchContext);
        String ar = user.allreducePattern() != null ? user.allreducePattern() : allreducePattern;
        return new ProfileCatalog(merged, rules, comm, context, ar, displayNames.prependedBy(user.displayNames()));
    }

    public List<Profile> profiles() {
        return profiles;
    }

    public List<CategoryRule> universalCategories() {
        return universal;
    }

    /** Categories that are communication: every collective and expert-parallel dispatch/combine. */
    public List<String> communicationCategories() {
        return communication;
    }

    /** Ordered rules on the names of the ops and annotations a kernel was launched in. */
    public List<CategoryRule> launchContextCategories() {
        return launchContext;
    }

    public String allreducePattern() {
        return allreducePattern;
    }

    public DisplayNames displayNames() {
        return displayNames;
    }

    public Optional<Profile> find(String name) {
        return profiles.stream().filter(p -> p.name().equals(name)).findFirst();
    }

    public Profile require(String name) {
        return find(name)
                .orElseThrow(() -> new IllegalArgumentException("unknown profile " + name + "; known: "
                        + profiles.stream().map(Profile::name).toList()));
    }

    /** The first profile whose select_when holds for this config.json (null config: only "always" ones). */
    public Profile select(JsonNode config) {
        return profiles.stream()
                .filter(p -> p.selectWhen().holds(config))
                .findFirst()
                .orElseThrow(() -> new IllegalStateException("no profile applies and none is marked always"));
    }
}
