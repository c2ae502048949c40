package io.llmprof.deploy.cli;

import picocli.CommandLine;

/** Version from the jar manifest (set by Maven), "dev" when run from classes. */
public final class BuildInfo implements CommandLine.IVersionProvider {
    public static String version() {
        String v = BuildInfo.class.getPackage().getImplementationVersion();
        return v == null ? "dev" : v;
    }

    @Override
    public String[] getVersion() {
        return new String[] {"llmprof " + version()};
    }
}
