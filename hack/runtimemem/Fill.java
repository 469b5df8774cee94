// Fill touches a fraction of the maximum heap with retained byte arrays, then prints
// READY and sleeps, so run.sh can read the process's resident set from /proc.
import java.util.ArrayList;
import java.util.List;

public class Fill {
    public static void main(String[] args) throws Exception {
        double fraction = args.length > 0 ? Double.parseDouble(args[0]) : 0.9;
        long max = Runtime.getRuntime().maxMemory();
        long target = (long) (max * fraction);
        List<byte[]> keep = new ArrayList<>();
        long held = 0;
        int chunk = 256 * 1024;
        while (held + chunk < target) {
            byte[] b = new byte[chunk];
            for (int i = 0; i < b.length; i += 4096) {
                b[i] = 1;
            }
            keep.add(b);
            held += chunk;
        }
        System.out.println("READY max=" + max + " held=" + held + " arrays=" + keep.size());
        System.out.flush();
        Thread.sleep(60_000);
    }
}
