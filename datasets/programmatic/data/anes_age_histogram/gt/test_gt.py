import json
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt
import pandas as pd
df = pd.read_csv('data.csv')
fig, ax = plt.subplots(figsize=(6, 4))
ax.hist(df['age'], bins=20)
ax.set_xlabel('age (years)')
ax.set_ylabel('respondents')
ax.set_title('Age of ANES 1996 respondents')
fig.savefig('age_histogram.png', dpi=80, metadata={'Software': None})
json.dump({'xlabel': 'age (years)', 'ylabel': 'respondents', 'title': 'Age of ANES 1996 respondents', 'bins': 20}, open('plot_info.json', 'w'))
