// The manifest the launcher's own tests read (they link no compiler) is the
// one the compiler writes; regenerate it with this command when the format
// changes (and bump kManifestFormatVersion, tile/Target/ManifestFormat.h).
// RUN: tile-opt %tile_src/examples/swiglu.mlir -tile-differentiate | tile-translate --tile-manifest | diff - %tile_src/unittests/Launcher/swiglu.manifest.json
