// RUN: %expect-error tile-opt %s
 }{ ][ %%% ### @@@ ::: tile.cast <<<>>>
