# Plot of docs/whatif.md's Qwen2.5-72B study (figures from the three
# offload_h200_72b*.textproto scenarios): gnuplot docs/whatif_72b_offload.gp
$data << EOD
# gpus pinned_async pageable_blocking bucket_5e7 host_112GBps step_pinned step_host112
64 5870.6 7173.1 6507.6 7577.1 566.9 2273.5
256 5216.8 6489.3 6178.8 5643.4 142.1 568.7
1024 5442.4 6432.8 6265.9 5549.0 35.8 142.5
EOD
set terminal svg size 760,420 font "Helvetica,12" background rgb "white"
set output "docs/whatif_72b_offload.svg"
set title "Qwen2.5-72B, ZeRO-3, CPU optimizer offload, H200 (8 per node): one step"
set logscale x 2
set xtics ("64" 64, "256" 256, "1024" 1024)
set xlabel "GPUs"
set ylabel "step time, ms (simulated)"
set yrange [0:9000]
set key at graph 0.98, graph 0.6 right box opaque
set grid ytics
plot $data using 1:2 with linespoints lw 2 pt 7 title "pinned, async (bucket 5e8)", \
     $data using 1:3 with linespoints lw 2 pt 5 title "pageable, blocking", \
     $data using 1:4 with linespoints lw 2 pt 9 title "pinned, async, bucket 5e7", \
     $data using 1:5 with linespoints lw 2 pt 11 title "pinned, async, host 112 GB/s per node", \
     $data using 1:6 with linespoints lw 2 dt 2 pt 7 title "STEP (host AdamW) of pinned, async", \
     $data using 1:7 with linespoints lw 2 dt 2 pt 11 title "STEP at 112 GB/s per node"
