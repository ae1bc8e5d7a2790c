// Reads an HdrHistogram interval log with HdrHistogram's own Java reader and prints, per
// tag ("-" = untagged lines), the merged histogram's figures as one JSON line.
// Run: java -cp HdrHistogram.jar HlogCheck.java LOG TAG...
import java.util.Locale;
import org.HdrHistogram.EncodableHistogram;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogReader;

public class HlogCheck {
    public static void main(String[] args) throws Exception {
        double[] percentiles = {50.0, 90.0, 99.0, 99.9, 99.99, 99.999};
        for (int i = 1; i < args.length; i++) {
            String tag = args[i].equals("-") ? null : args[i];
            HistogramLogReader reader = new HistogramLogReader(args[0]);
            Histogram total = new Histogram(3);
            int lines = 0;
            EncodableHistogram h;
            while ((h = reader.nextIntervalHistogram()) != null) {
                boolean same = tag == null ? h.getTag() == null : tag.equals(h.getTag());
                if (same) {
                    total.add((Histogram) h);
                    lines++;
                }
            }
            reader.close();
            StringBuilder p = new StringBuilder();
            for (double q : percentiles) {
                p.append(p.length() == 0 ? "" : ",").append(total.getValueAtPercentile(q));
            }
            System.out.println(String.format(Locale.US,
                "{\"tag\":\"%s\",\"lines\":%d,\"count\":%d,\"min\":%d,\"max\":%d,\"percentiles\":[%s]}",
                args[i], lines, total.getTotalCount(), total.getMinValue(), total.getMaxValue(), p));
        }
    }
}
