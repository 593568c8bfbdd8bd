import json
import pandas as pd
df = pd.read_csv('data.csv')
r = {'n_rows': int(len(df)), 'mean_mdvis': round(float(df['mdvis'].mean()), 3), 'share_zero_visits': round(float((df['mdvis'] == 0).mean()), 3)}
json.dump(r, open('report.json', 'w'), indent=1)
open('report.md', 'w').write(f"The data hold {r['n_rows']} person-years. People made {r['mean_mdvis']} doctor visits a year on average, and {r['share_zero_visits']:.1%} of the person-years had no visits at all.\n")
